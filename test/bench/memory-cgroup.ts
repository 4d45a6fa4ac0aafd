/**
 * A memory cgroup with a real limit, for running a benchmark's server the
 * way a container runs it: the kernel charges every page the process touches
 * (its heap and the page cache it reads in), refuses to go over the limit and
 * OOM-kills the process where reclaim cannot make room. Node also reads the
 * limit (libuv's constrained memory) and V8 sizes its heap from it, exactly
 * as in a pod with `limits.memory`.
 *
 * Works on cgroup v2 (memory.max, memory.peak, memory.events) and on v1
 * (memory.limit_in_bytes, memory.max_usage_in_bytes, memory.oom_control),
 * below the cgroup this process is in. Needs root.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  dir: string;
  /** `argv` run inside the cgroup: a shell moves itself in, then execs the command (same PID). */
  wrap(argv: string[]): string[];
  /** Highest charge since creation, in MiB. */
  peakMiB(): number;
  /** Processes the kernel OOM-killed in this cgroup. */
  oomKills(): number;
  /** Removes the cgroup (its processes must have exited). */
  remove(): void;
}

const MIB = 1024 * 1024;

function ownCgroup(controller: 'memory' | ''): string | undefined {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (controllers === undefined || path === undefined) continue;
    if (controller === '' ? controllers === '' : controllers.split(',').includes(controller)) return path;
  }
  return undefined;
}

export function createMemoryCgroup(name: string, limitMiB: number): MemoryCgroup {
  const v1Path = ownCgroup('memory');
  const v1 = v1Path !== undefined && existsSync('/sys/fs/cgroup/memory');
  const base = v1 ? join('/sys/fs/cgroup/memory', v1Path) : join('/sys/fs/cgroup', ownCgroup('') ?? '/');
  const dir = join(base, name);
  try {
    mkdirSync(dir);
    if (v1) {
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitMiB * MIB));
      // Without swap accounting the limit already covers everything; with it, forbid swapping past it.
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(limitMiB * MIB));
    } else {
      writeFileSync(join(dir, 'memory.max'), String(limitMiB * MIB));
      writeFileSync(join(dir, 'memory.swap.max'), '0');
    }
  } catch (error) {
    throw new Error(`creating memory cgroup ${dir} with a ${limitMiB} MiB limit (needs root and a writable cgroup fs): ${(error as Error).message}`, {
      cause: error,
    });
  }
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return {
    dir,
    wrap: (argv) => ['sh', '-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$@"`, 'sh', ...argv],
    peakMiB: () => Number(read(v1 ? 'memory.max_usage_in_bytes' : 'memory.peak').trim()) / MIB,
    oomKills: () => Number(/oom_kill (\d+)/.exec(read(v1 ? 'memory.oom_control' : 'memory.events'))?.[1] ?? 0),
    remove: () => rmdirSync(dir),
  };
}
