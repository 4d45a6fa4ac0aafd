/**
 * The release hook's containers sampled as the kubelet counts them, every
 * second, for the benchmarks that set its requests and limit
 * (hook-footprint, bench:rollout): the working set of the hook's cgroup and
 * its CPU, each sample labelled with the phase of its container's life:
 *   - start: its first 20 s (Node's start, the lists),
 *   - idle: after that, while its pod is not being deleted,
 *   - release: once its pod is being deleted (SIGTERM, R1, exit).
 */
import { containerStatus } from '../support/container-runs.ts';
import { core } from '../support/kube.ts';
import { RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { cgroupDirsOf, containerPids, readCgroup } from './container-cgroup.ts';
import { type Spread, spreadOf } from './stats.ts';

export const START_PHASE_MS = 20_000;
export const HOOK_PHASES = ['start', 'idle', 'release'] as const;
export type HookPhase = (typeof HOOK_PHASES)[number];

export interface HookSample {
  container: string;
  phase: HookPhase;
  at: number;
  workingSetMiB: number;
  /** The anonymous part of the working set; absent in samples taken before it was read. */
  anonMiB?: number;
  /** CPU millicores since this container's previous sample; absent on its first. */
  milliCores?: number;
}

/** Samples every running hook container of `namespace` every second until `stop` aborts. */
export async function sampleHooks(namespace: string, samples: HookSample[], stop: AbortSignal): Promise<void> {
  const last = new Map<string, { at: number; cpuNanos: number; dirs: ReturnType<typeof cgroupDirsOf> }>();
  while (!stop.aborted) {
    const tick = Date.now();
    // a list that fails (the API server busy with a rollout) skips this second's samples
    const pods = (await core.listNamespacedPod({ namespace }).catch(() => undefined))?.items ?? [];
    /** Each node's containerd tasks, listed once a tick and only for a node with a container not seen before. */
    const tasksOf = new Map<string, Map<string, number>>();
    for (const pod of pods) {
      const status = containerStatus(pod, RELEASE_HOOK_CONTAINER);
      const id = status?.containerID?.replace(/^containerd:\/\//, '');
      const started = status?.state?.running?.startedAt;
      if (!id || !started) continue;
      try {
        const known = last.get(id);
        let dirs = known?.dirs;
        if (!dirs) {
          const node = pod.spec?.nodeName ?? '';
          const tasks = tasksOf.get(node) ?? containerPids(pod.spec?.nodeName);
          tasksOf.set(node, tasks);
          const pid = tasks.get(id);
          if (pid === undefined) continue;
          dirs = cgroupDirsOf(pid);
        }
        const reading = readCgroup(dirs);
        const at = performance.now();
        const phase: HookPhase = pod.metadata?.deletionTimestamp ? 'release' : Date.now() - new Date(started).getTime() < START_PHASE_MS ? 'start' : 'idle';
        samples.push({
          container: id,
          phase,
          at,
          workingSetMiB: reading.workingSetBytes / 2 ** 20,
          anonMiB: reading.anonBytes / 2 ** 20,
          ...(known ? { milliCores: (reading.cpuNanos - known.cpuNanos) / 1e6 / ((at - known.at) / 1000) } : {}),
        });
        last.set(id, { at, cpuNanos: reading.cpuNanos, dirs });
      } catch {
        // the container ended between the list and the read: its last sample stands
      }
    }
    const rest = 1000 - (Date.now() - tick);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
}

export interface HookPhaseSummary {
  phase: HookPhase;
  samples: number;
  containers: number;
  workingSetMiB: Spread;
  /** Of the samples that read it; absent where none did (records from before it was sampled). */
  anonMiB?: Spread;
  milliCores: Spread;
}

export function phaseSummary(samples: readonly HookSample[], phase: HookPhase): HookPhaseSummary {
  const inPhase = samples.filter((s) => s.phase === phase);
  const ws = inPhase.map((s) => s.workingSetMiB);
  const anon = inPhase.filter((s) => s.anonMiB !== undefined).map((s) => s.anonMiB as number);
  const cpu = inPhase.filter((s) => s.milliCores !== undefined).map((s) => s.milliCores as number);
  return {
    phase,
    samples: ws.length,
    containers: new Set(inPhase.map((s) => s.container)).size,
    workingSetMiB: spreadOf(ws),
    ...(anon.length > 0 ? { anonMiB: spreadOf(anon) } : {}),
    milliCores: spreadOf(cpu),
  };
}

/** The phases as a Markdown table, under `title`. */
export function phaseTable(title: string, phases: readonly HookPhaseSummary[]): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
  return (
    `# ${title}\n` +
    '| phase | containers | samples | working set MiB p50 / p99 / max | of it anonymous MiB p50 / p99 / max | CPU mCPU p50 / p99 / max |\n| --- | ---: | ---: | ---: | ---: | ---: |\n' +
    phases
      .map((p) => {
        const spread = (s: Spread | undefined) => (s ? `${f(s.p50)} / ${f(s.p99)} / ${f(s.max)}` : '—');
        return `| ${p.phase} | ${p.containers} | ${p.samples} | ${spread(p.workingSetMiB)} | ${spread(p.anonMiB)} | ${spread(p.milliCores)} |`;
      })
      .join('\n') +
    '\n'
  );
}
