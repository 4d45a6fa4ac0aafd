/**
 * A running container's process and its cgroup's figures as the kubelet
 * reads them: the working set (usage less inactive file pages, the figure
 * eviction, `kubectl top` and the scheduler's view of use are based on) and
 * the CPU time used. Works on cgroup v1 (memory.usage_in_bytes,
 * cpuacct.usage) and v2 (memory.current, cpu.stat). The local cluster's
 * nodes share this machine's /proc and /sys.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { containerStatus } from '../support/container-runs.ts';
import { clusterNode } from '../support/nodes.ts';

/** The running containers of a node (containerd IDs without the scheme) and their PIDs, from its containerd's task list. */
export function containerPids(nodeName: string | undefined): Map<string, number> {
  const address = nodeName ? clusterNode(nodeName).containerdAddress : (process.env.CONTAINERD_ADDRESS ?? '');
  const tasks = execFileSync('ctr', ['--address', address, '--namespace', 'k8s.io', 'task', 'ls'], { encoding: 'utf8' });
  const pids = new Map<string, number>();
  for (const [task, pid] of tasks.split('\n').map((l) => l.trim().split(/\s+/))) {
    if (task && pid && /^\d+$/.test(pid)) pids.set(task, Number(pid));
  }
  return pids;
}

/** The PID of container `containerId` (containerd://...) on its node. */
export function containerPid(containerId: string, nodeName: string | undefined): number {
  const id = containerId.replace(/^containerd:\/\//, '');
  const pid = containerPids(nodeName).get(id);
  if (pid === undefined) throw new Error(`container ${id} has no running task`);
  return pid;
}

/**
 * SIGKILL to `container`'s process in `pod` by its PID on its node, as a
 * crash or an OOM kill does it: no signal the process could act on, and the
 * kubelet restarts the container in the same pod. Undefined if the container
 * is not running; throws if its process cannot be found.
 */
export function sigkillContainer(pod: V1Pod, container: string): { pid: number; restartCount: number } | undefined {
  const status = containerStatus(pod, container);
  if (!status?.containerID || !status.state?.running) return undefined;
  const pid = containerPid(status.containerID, pod.spec?.nodeName);
  process.kill(pid, 'SIGKILL');
  return { pid, restartCount: status.restartCount };
}

export interface CgroupReading {
  workingSetBytes: number;
  /**
   * The anonymous memory of the working set (v2 `anon`, v1 `total_rss`): the
   * part no reclaim can give back. The rest is page cache, charged to the
   * first cgroup that read a file (a node's first hook carries the image's).
   */
  anonBytes: number;
  /** CPU time used by the cgroup so far. */
  cpuNanos: number;
}

function statField(text: string, key: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${key} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** The cgroup directories of `pid`: memory and CPU accounting (the same one on v2). */
export function cgroupDirsOf(pid: number): { memory: string; cpu: string; v2: boolean } {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  const v1 = (controller: string) => lines.map((l) => l.split(':')).find(([, cs]) => cs?.split(',').includes(controller))?.[2];
  const memory = v1('memory');
  const cpu = v1('cpuacct');
  if (memory && cpu) return { memory: join('/sys/fs/cgroup/memory', memory), cpu: join('/sys/fs/cgroup/cpuacct', cpu), v2: false };
  const unified = lines.find((l) => l.startsWith('0::'))?.slice(3);
  if (unified === undefined) throw new Error(`/proc/${pid}/cgroup names neither v1 memory and cpuacct nor a v2 cgroup`);
  const dir = join('/sys/fs/cgroup', unified);
  return { memory: dir, cpu: dir, v2: true };
}

/** The working set and CPU time of the cgroup at `dirs`, as the kubelet computes the working set. */
export function readCgroup(dirs: { memory: string; cpu: string; v2: boolean }): CgroupReading {
  if (dirs.v2) {
    const stat = readFileSync(join(dirs.memory, 'memory.stat'), 'utf8');
    const usage = Number(readFileSync(join(dirs.memory, 'memory.current'), 'utf8'));
    const cpu = statField(readFileSync(join(dirs.cpu, 'cpu.stat'), 'utf8'), 'usage_usec') * 1000;
    return { workingSetBytes: Math.max(0, usage - statField(stat, 'inactive_file')), anonBytes: statField(stat, 'anon'), cpuNanos: cpu };
  }
  const stat = readFileSync(join(dirs.memory, 'memory.stat'), 'utf8');
  const usage = Number(readFileSync(join(dirs.memory, 'memory.usage_in_bytes'), 'utf8'));
  const cpuFile = join(dirs.cpu, 'cpuacct.usage');
  if (!existsSync(cpuFile)) throw new Error(`${cpuFile} is missing: no CPU accounting for this cgroup`);
  return {
    workingSetBytes: Math.max(0, usage - statField(stat, 'total_inactive_file')),
    anonBytes: statField(stat, 'total_rss'),
    cpuNanos: Number(readFileSync(cpuFile, 'utf8')),
  };
}
