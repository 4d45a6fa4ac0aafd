/**
 * What a soak run found, from its record (one JSON object per line, a `run`
 * line first): faults applied per kind and mode, split brain, locks left held
 * by pods that can never run, leaderless stretches, restarts the soak did not
 * cause, watches left down, and whether the hooks' and webhook's memory grew.
 * docs/soak.md (soak-report.ts) is drawn from these numbers alone.
 * Times (`atMs`) are milliseconds since the run's `startedAt`.
 */
import { HOOK_CONTAINER_NAME } from '../../src/injector/index.ts';
import { parseJsonLines } from './failover-trials.ts';
import { SOAK_FAULTS, soakFaultText } from './soak-plan.ts';

export interface SoakRunRecord {
  kind: 'run';
  /** The command line, as a user would type it. */
  command: string;
  startedAt: string;
  finishedAt?: string;
  seed: number;
  /** The duration asked for; finishedAt - startedAt is the one it took. */
  durationMs: number;
  /** The cluster's nodes at the start; absent from a record of before it was kept. */
  nodes?: number;
}

export interface SoakFaultRecord {
  kind: 'fault';
  atMs: number;
  /** A SoakFault; a name the report does not know is shown as it is. */
  fault: string;
  /** What was hit: a pod for a pod or container fault, the webhook replica's pod, or the API server. */
  target: string;
  namespace: string;
  /** Ignored for a cluster-wide fault, which hits both modes at once. */
  withLeaderhook: boolean;
  /**
   * Skipped: nothing to hit at that moment (no leader, the pod already
   * going). Failed: there was, but applying the fault threw (detail says
   * why): the driver's trouble, not the cluster's answer.
   */
  outcome: 'applied' | 'skipped' | 'failed';
  detail?: string;
}

/** The split-brain checker's verdict on one namespace's window of the run. */
export interface SoakCheckRecord {
  kind: 'check';
  atMs: number;
  namespace: string;
  withLeaderhook: boolean;
  splitBrain: number;
  /** Stretches of the lock's history the recorder could not see (a watch relisted, as after an API server restart): the checker cannot vouch for them. */
  unobserved?: number;
  /** The split-brain checker's kinds of what it found, where it found any. */
  splitBrainKinds?: string[];
  /** The checker's sentence for each of them (which processes, which revisions); absent in records before it was kept. */
  splitBrainFindings?: string[];
  lockHeldByDeadPod: number;
  /** The longest stretch of the window with nobody holding the lock. */
  leaderlessMs: number;
}

export interface SoakSampleRecord {
  kind: 'sample';
  atMs: number;
  pod: string;
  container: string;
  namespace: string;
  workingSetBytes: number;
  /** Its anonymous part (container-cgroup.ts), which no reclaim gives back; absent in records before it was sampled. */
  anonBytes?: number;
  /** The container's CPU time so far (its cgroup's), from which two samples of one run give its millicores; absent in records before it was sampled. */
  cpuNanos?: number;
  /** The container's restartCount as the kubelet reports it. */
  restarts: number;
}

export interface SoakWatchRecord {
  kind: 'watch';
  atMs: number;
  pod: string;
  watch: string;
  up: boolean;
}

/** One stretch of a namespace with nobody leading (no lock holder writing heartbeats), written once it ended, or open at the end. */
export interface SoakGapRecord {
  kind: 'gap';
  namespace: string;
  withLeaderhook: boolean;
  fromMs: number;
  toMs: number;
  ms: number;
  /** Still without a leader when the soak ended. */
  open: boolean;
}

/**
 * A hook's or webhook replica's V8 heap, read from its metrics (prom-client's
 * default Node.js metrics) beside the minute's samples: the heap in use, and
 * the major collections since the process started.
 */
export interface SoakHeapRecord {
  kind: 'heap';
  atMs: number;
  namespace: string;
  pod: string;
  container: string;
  heapUsedBytes: number;
  majorGcs: number;
  /** The container's restartCount as the kubelet reports it: a restart is a new process, its count from 0. */
  restarts: number;
}

export type SoakRecord = SoakRunRecord | SoakFaultRecord | SoakCheckRecord | SoakSampleRecord | SoakWatchRecord | SoakGapRecord | SoakHeapRecord;

export const parseSoakRecords = (text: string): SoakRecord[] => parseJsonLines<SoakRecord>(text, 'soak record');

/** The record's one run line; a record with none, or several, cannot be reported honestly. */
export function soakRunOf(records: readonly SoakRecord[]): SoakRunRecord {
  const runs = records.filter((record): record is SoakRunRecord => record.kind === 'run');
  if (runs.length !== 1) throw new Error(`a soak record holds exactly one "run" line; this one has ${runs.length}`);
  return runs[0]!;
}

const HOUR_MS = 3_600_000;

/** Shorter than this, a GC cycle or two is the whole series, and its slope says nothing about a leak. */
export const MIN_SLOPE_SPAN_MS = 30 * 60_000;

export interface MemorySample {
  atMs: number;
  bytes: number;
}

export interface MemorySlope {
  bytesPerHour: number;
  /** The fitted bytes at atMs 0. */
  interceptBytes: number;
  n: number;
  /** 1 where the fit leaves nothing unexplained, a constant series included. */
  r2: number;
}

/** The least-squares line through the samples. */
export function memorySlope(samples: readonly MemorySample[], minSpanMs = MIN_SLOPE_SPAN_MS): MemorySlope {
  const n = samples.length;
  if (n < 3) throw new Error(`a memory slope needs at least 3 samples, got ${n}`);
  if (samples.some((sample) => !Number.isFinite(sample.atMs) || !Number.isFinite(sample.bytes)))
    throw new Error('a memory sample has a time or size that is not a number');
  const times = samples.map((sample) => sample.atMs);
  const spanMs = Math.max(...times) - Math.min(...times);
  if (spanMs < minSpanMs)
    throw new Error(`a memory slope needs samples spanning at least ${minSpanMs / 60_000} min, these span ${(spanMs / 60_000).toFixed(1)} min`);
  const xs = times.map((ms) => ms / HOUR_MS);
  const ys = samples.map((sample) => sample.bytes);
  const meanX = xs.reduce((a, b) => a + b, 0) / n;
  const meanY = ys.reduce((a, b) => a + b, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - meanX;
    const dy = ys[i]! - meanY;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  const bytesPerHour = sxy / sxx;
  const residual = syy - bytesPerHour * sxy;
  return { bytesPerHour, interceptBytes: meanY - bytesPerHour * meanX, n, r2: syy === 0 ? 1 : 1 - residual / syy };
}

/** The slope where the samples span long enough to judge (memorySlope's minimum), else undefined: a short run is said to be one, not thrown on. */
export function judgedSlope(samples: readonly MemorySample[], minSpanMs = MIN_SLOPE_SPAN_MS): MemorySlope | undefined {
  try {
    return memorySlope(samples, minSpanMs);
  } catch {
    return undefined;
  }
}

/**
 * Not zero: a working set is a GC sawtooth (the heap fills, a collection
 * empties it, at no fixed period), so a fitted slope is never exactly 0 even
 * with nothing leaking; the threshold is what the soak calls a leak.
 * 1 MiB/h: a hook leaking that fast outgrows its limit's headroom within weeks, well inside an operator's life.
 */
export const LEAK_THRESHOLD_BYTES_PER_HOUR = 2 ** 20;

export interface LeakResult {
  key: string;
  thresholdBytesPerHour: number;
  /** Absent where the series is too short to judge (memorySlope's minimum). */
  slope?: MemorySlope;
  /** The slope of the run's later half alone, where that half is itself long enough to judge: see laterHalf. */
  laterSlope?: MemorySlope;
  verdict: 'flat' | 'grows' | 'too short';
  /** Why a series was not judged. */
  reason?: string;
}

/**
 * The samples of a run's later half in time. A process's memory rises while it
 * warms up (code compiled, modules loaded, buffers and pools filled) and then
 * levels off, where a leak goes on rising: the later half's slope tells the
 * two apart. It is reported beside the whole run's, which stays the verdict.
 */
export function laterHalf(samples: readonly MemorySample[]): MemorySample[] {
  if (samples.length === 0) return [];
  const times = samples.map((sample) => sample.atMs);
  const middle = (Math.min(...times) + Math.max(...times)) / 2;
  return samples.filter((sample) => sample.atMs >= middle);
}

/**
 * Each series judged against the threshold. A short series (a pod deleted
 * early in the run) is reported as such rather than thrown on: in a soak
 * that deletes pods, most runs of a container are short.
 */
export function leakVerdict(
  series: ReadonlyMap<string, readonly MemorySample[]>,
  thresholdBytesPerHour = LEAK_THRESHOLD_BYTES_PER_HOUR,
  minSpanMs = MIN_SLOPE_SPAN_MS,
): LeakResult[] {
  return [...series].map(([key, samples]) => {
    let slope: MemorySlope;
    try {
      slope = memorySlope(samples, minSpanMs);
    } catch (error) {
      return { key, thresholdBytesPerHour, verdict: 'too short', reason: (error as Error).message };
    }
    const verdict = slope.bytesPerHour > thresholdBytesPerHour ? 'grows' : 'flat';
    // a later half shorter than a judged run has no slope: the whole run's is all there is
    const laterSlope = judgedSlope(laterHalf(samples), minSpanMs);
    return { key, thresholdBytesPerHour, slope, ...(laterSlope ? { laterSlope } : {}), verdict };
  });
}

/** The webhook's container in deploy/deployment.yaml and the chart. */
export const WEBHOOK_CONTAINER_NAME = 'webhook';

export type ContainerKind = 'hook' | 'webhook' | 'operator';

export const containerKindOf = (container: string): ContainerKind =>
  container === HOOK_CONTAINER_NAME ? 'hook' : container === WEBHOOK_CONTAINER_NAME ? 'webhook' : 'operator';

/**
 * One run of one container, "namespace/pod/container#restarts": a restart is
 * a new process, whose memory, CPU time and collections start again.
 */
const runKey = (record: { namespace: string; pod: string; container: string; restarts: number }) =>
  `${record.namespace}/${record.pod}/${record.container}#${record.restarts}`;

/** Which figure of a sample a memory series follows: the working set, or its anonymous part where sampled. */
export type MemoryPart = 'workingSet' | 'anon';

/**
 * The working set (or its anonymous part) of each run of each container,
 * keyed "namespace/pod/container#restarts": a restart empties the memory, and
 * a series across it would hide a leak behind the drop. The anonymous series
 * skips samples taken before it was recorded.
 */
export function memorySeries(records: readonly SoakRecord[], kind: ContainerKind, part: MemoryPart = 'workingSet'): Map<string, MemorySample[]> {
  const series = new Map<string, MemorySample[]>();
  for (const record of records) {
    if (record.kind !== 'sample' || containerKindOf(record.container) !== kind) continue;
    const bytes = part === 'anon' ? record.anonBytes : record.workingSetBytes;
    if (bytes === undefined) continue;
    const key = runKey(record);
    series.set(key, [...(series.get(key) ?? []), { atMs: record.atMs, bytes }]);
  }
  return series;
}

/**
 * The CPU each run of each container of a kind used between two of its
 * samples in a row, in millicores: the sampling interval's average. A pair
 * whose CPU time went down (a restart the kubelet had not reported yet) says
 * nothing and is left out.
 */
export function cpuMilliCores(records: readonly SoakRecord[], kind: ContainerKind): number[] {
  const last = new Map<string, { atMs: number; cpuNanos: number }>();
  const milliCores: number[] = [];
  const samples = records
    .filter((record): record is SoakSampleRecord => record.kind === 'sample' && containerKindOf(record.container) === kind && record.cpuNanos !== undefined)
    .sort((a, b) => a.atMs - b.atMs);
  for (const sample of samples) {
    const key = runKey(sample);
    const before = last.get(key);
    const cpuNanos = sample.cpuNanos as number;
    if (before && sample.atMs > before.atMs && cpuNanos >= before.cpuNanos)
      // nanoseconds of CPU per millisecond of wall time, over 1000: millicores
      milliCores.push((cpuNanos - before.cpuNanos) / (sample.atMs - before.atMs) / 1000);
    last.set(key, { atMs: sample.atMs, cpuNanos });
  }
  return milliCores;
}

/**
 * The heap each process of a kind kept after its major collections: the
 * first reading after the count went up, which is the live heap plus at most
 * one sampling interval's allocation. A garbage-collected heap grows between
 * major collections, and at a soak's allocation rate these come an hour
 * apart, so the working set's slope over a shorter run measures that rise;
 * the heap after each collection is where a leak shows. Keyed as
 * memorySeries keys a run of a container.
 */
export function heapAfterMajorGcs(records: readonly SoakRecord[], kind: ContainerKind): Map<string, MemorySample[]> {
  const readings = records
    .filter((record): record is SoakHeapRecord => record.kind === 'heap' && containerKindOf(record.container) === kind)
    .sort((a, b) => a.atMs - b.atMs);
  const lastCount = new Map<string, number>();
  const floors = new Map<string, MemorySample[]>();
  for (const reading of readings) {
    const key = runKey(reading);
    const before = lastCount.get(key);
    // a run's first reading has no count before it: whether a collection just ran is unknown
    if (before !== undefined && reading.majorGcs > before) floors.set(key, [...(floors.get(key) ?? []), { atMs: reading.atMs, bytes: reading.heapUsedBytes }]);
    lastCount.set(key, reading.majorGcs);
  }
  return floors;
}

export interface LeaderObservation {
  atMs: number;
  namespace: string;
  leader: string | undefined;
}

export interface LeaderGap {
  fromMs: number;
  toMs: number;
  ms: number;
  /** Still without a leader at the end of the observations: `toMs` is that end, not a new leader. */
  open: boolean;
}

/**
 * Per namespace, the stretches with nobody leading: from the first
 * observation without a leader to the next one with. Every namespace observed
 * has an entry, an empty one where it always had a leader.
 */
export function leaderGaps(events: readonly LeaderObservation[], endMs = events.at(-1)?.atMs ?? 0): Map<string, LeaderGap[]> {
  const gaps = new Map<string, LeaderGap[]>();
  const since = new Map<string, number>();
  events.forEach((event, i) => {
    const before = events[i - 1];
    if (before && event.atMs < before.atMs) {
      throw new Error(`leader observation ${i + 1} (${event.atMs} ms) comes before the one ahead of it (${before.atMs} ms): they must be in time order`);
    }
    if (!gaps.has(event.namespace)) gaps.set(event.namespace, []);
    const from = since.get(event.namespace);
    if (event.leader === undefined && from === undefined) since.set(event.namespace, event.atMs);
    if (event.leader !== undefined && from !== undefined) {
      gaps.get(event.namespace)!.push({ fromMs: from, toMs: event.atMs, ms: event.atMs - from, open: false });
      since.delete(event.namespace);
    }
  });
  for (const [namespace, from] of since) gaps.get(namespace)!.push({ fromMs: from, toMs: endMs, ms: Math.max(0, endMs - from), open: true });
  return gaps;
}

/** The longest leaderless stretch per namespace, 0 where there was none. */
export function longestGap(gaps: ReadonlyMap<string, readonly LeaderGap[]>): Map<string, number> {
  return new Map([...gaps].map(([namespace, list]) => [namespace, Math.max(0, ...list.map((gap) => gap.ms))]));
}

/**
 * How long after a fault a leaderless stretch that begins counts as its
 * doing: the longest failover the soak meets (a JVM operator's rollout, a
 * Lease run out after an API server's restart) begins well within it.
 */
export const GAP_CAUSE_WINDOW_MS = 120_000;

/** The fault a leaderless stretch followed, where none did: a finding. */
export const NO_FAULT = 'no fault';

export interface GapsAfterFault {
  /** A fault kind, or NO_FAULT. */
  fault: string;
  withLeaderhook: number[];
  withoutLeaderhook: number[];
}

/**
 * Each leaderless stretch against the fault it followed: the latest applied
 * fault on its namespace, or cluster-wide, at most `windowMs` before it
 * began. Grouped per fault kind in SOAK_FAULTS' order, NO_FAULT last; the
 * lengths in ms, in record order.
 */
export function gapsAfterFaults(records: readonly SoakRecord[], windowMs = GAP_CAUSE_WINDOW_MS): GapsAfterFault[] {
  const faults = records.filter((record): record is SoakFaultRecord => record.kind === 'fault' && record.outcome === 'applied').sort((a, b) => a.atMs - b.atMs);
  const groups = new Map<string, GapsAfterFault>();
  for (const gap of records.filter((record): record is SoakGapRecord => record.kind === 'gap')) {
    const cause = faults.findLast(
      (fault) =>
        (fault.namespace === gap.namespace || soakFaultText(fault.fault)?.scope === 'cluster') &&
        fault.atMs <= gap.fromMs &&
        gap.fromMs - fault.atMs <= windowMs,
    );
    const kind = cause?.fault ?? NO_FAULT;
    const group = groups.get(kind) ?? { fault: kind, withLeaderhook: [], withoutLeaderhook: [] };
    (gap.withLeaderhook ? group.withLeaderhook : group.withoutLeaderhook).push(gap.ms);
    groups.set(kind, group);
  }
  const known = Object.keys(SOAK_FAULTS);
  const rank = (fault: string) => (fault === NO_FAULT ? Number.POSITIVE_INFINITY : known.includes(fault) ? known.indexOf(fault) : known.length);
  return [...groups.values()].sort((a, b) => rank(a.fault) - rank(b.fault) || (a.fault < b.fault ? -1 : a.fault > b.fault ? 1 : 0));
}

/** A kubelet restarts an exited container within seconds, 10 s after a first back-off; a minute covers that and a slow sample. */
export const RESTART_CAUSE_WINDOW_MS = 60_000;

/** Where a fault counts: a cluster-wide fault hits both modes at once. */
export type FaultMode = 'with' | 'without' | 'cluster';

export interface FaultCounts {
  fault: string;
  applied: Record<FaultMode, number>;
  skipped: Record<FaultMode, number>;
  failed: Record<FaultMode, number>;
}

export interface ModeTotals {
  checks: number;
  splitBrain: number;
  unobserved: number;
  lockHeldByDeadPod: number;
  /** Undefined where no check ran in that mode. */
  longestLeaderlessMs?: number;
}

export interface ContainerRestart {
  namespace: string;
  pod: string;
  container: string;
  kind: ContainerKind;
  /** The sample that saw it: the restart happened since the container's previous sample. */
  seenAtMs: number;
}

export interface SoakTotals {
  /** SOAK_FAULTS' order, then kinds it does not know, by name. */
  faults: FaultCounts[];
  withLeaderhook: ModeTotals;
  withoutLeaderhook: ModeTotals;
  causedRestarts: number;
  uncausedRestarts: ContainerRestart[];
  watchesDown: { pod: string; watch: string; sinceMs: number }[];
  /** The checks that found a split brain, in the order of the record. */
  splitBrainChecks: SoakCheckRecord[];
}

const modeOf = (record: SoakFaultRecord): FaultMode =>
  soakFaultText(record.fault)?.scope === 'cluster' ? 'cluster' : record.withLeaderhook ? 'with' : 'without';

function faultCounts(faults: readonly SoakFaultRecord[]): FaultCounts[] {
  const known = Object.keys(SOAK_FAULTS);
  const named = new Set(faults.map((record) => record.fault));
  const order = [...known.filter((fault) => named.has(fault)), ...[...named].filter((fault) => !known.includes(fault)).sort()];
  return order.map((fault) => {
    const none = (): Record<FaultMode, number> => ({ with: 0, without: 0, cluster: 0 });
    const counts: FaultCounts = { fault, applied: none(), skipped: none(), failed: none() };
    for (const record of faults.filter((r) => r.fault === fault)) counts[record.outcome][modeOf(record)]++;
    return counts;
  });
}

function modeTotals(checks: readonly SoakCheckRecord[]): ModeTotals {
  const sum = (pick: (check: SoakCheckRecord) => number) => checks.reduce((total, check) => total + pick(check), 0);
  return {
    checks: checks.length,
    splitBrain: sum((check) => check.splitBrain),
    unobserved: sum((check) => check.unobserved ?? 0),
    lockHeldByDeadPod: sum((check) => check.lockHeldByDeadPod),
    ...(checks.length > 0 ? { longestLeaderlessMs: Math.max(...checks.map((check) => check.leaderlessMs)) } : {}),
  };
}

/**
 * Restarts seen as a rise of restartCount between two samples of a container.
 * One is the soak's doing if an applied fault that restarts that kind of
 * container hit that pod between `windowMs` before the previous sample and
 * this one; each fault accounts for one restart, but a cluster-wide fault
 * (the API server's restart) for any number, in any pod. The first sample of a
 * container is its baseline: restarts before the soak saw it are not counted.
 */
function restartsOf(records: readonly SoakRecord[], windowMs: number): { caused: number; uncaused: ContainerRestart[] } {
  const restarting = records.filter(
    (record): record is SoakFaultRecord => record.kind === 'fault' && record.outcome === 'applied' && soakFaultText(record.fault)?.restarts !== undefined,
  );
  const used = new Set<SoakFaultRecord>();
  const last = new Map<string, SoakSampleRecord>();
  let caused = 0;
  const uncaused: ContainerRestart[] = [];
  const samples = records.filter((record): record is SoakSampleRecord => record.kind === 'sample').sort((a, b) => a.atMs - b.atMs);
  for (const sample of samples) {
    const key = `${sample.namespace}/${sample.pod}/${sample.container}`;
    const previous = last.get(key);
    last.set(key, sample);
    if (!previous) continue;
    const kind = containerKindOf(sample.container);
    for (let i = 0; i < sample.restarts - previous.restarts; i++) {
      const cause = restarting.find(
        (fault) =>
          (soakFaultText(fault.fault)?.scope === 'cluster' || (!used.has(fault) && fault.namespace === sample.namespace && fault.target === sample.pod)) &&
          soakFaultText(fault.fault)?.restarts === kind &&
          fault.atMs > previous.atMs - windowMs &&
          fault.atMs <= sample.atMs,
      );
      if (cause) {
        if (soakFaultText(cause.fault)?.scope !== 'cluster') used.add(cause);
        caused++;
      } else {
        uncaused.push({ namespace: sample.namespace, pod: sample.pod, container: sample.container, kind, seenAtMs: sample.atMs });
      }
    }
  }
  return { caused, uncaused };
}

/**
 * Watches whose last record says down while their pod was still sampled
 * after it: a pod that is gone took its watches with it, one still running
 * should have reconnected.
 */
function watchesDownOf(records: readonly SoakRecord[]): SoakTotals['watchesDown'] {
  const lastState = new Map<string, SoakWatchRecord>();
  const lastSample = new Map<string, number>();
  for (const record of records) {
    if (record.kind === 'watch') {
      const key = `${record.pod}\n${record.watch}`;
      if ((lastState.get(key)?.atMs ?? Number.NEGATIVE_INFINITY) <= record.atMs) lastState.set(key, record);
    }
    if (record.kind === 'sample') lastSample.set(record.pod, Math.max(record.atMs, lastSample.get(record.pod) ?? Number.NEGATIVE_INFINITY));
  }
  return [...lastState.values()]
    .filter((state) => !state.up && (lastSample.get(state.pod) ?? Number.NEGATIVE_INFINITY) > state.atMs)
    .map((state) => ({ pod: state.pod, watch: state.watch, sinceMs: state.atMs }))
    .sort((a, b) => a.sinceMs - b.sinceMs || (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0));
}

export function soakTotals(records: readonly SoakRecord[], restartWindowMs = RESTART_CAUSE_WINDOW_MS): SoakTotals {
  const faults = records.filter((record): record is SoakFaultRecord => record.kind === 'fault');
  const checks = records.filter((record): record is SoakCheckRecord => record.kind === 'check');
  const restarts = restartsOf(records, restartWindowMs);
  return {
    faults: faultCounts(faults),
    withLeaderhook: modeTotals(checks.filter((check) => check.withLeaderhook)),
    withoutLeaderhook: modeTotals(checks.filter((check) => !check.withLeaderhook)),
    causedRestarts: restarts.caused,
    uncausedRestarts: restarts.uncaused,
    watchesDown: watchesDownOf(records),
    splitBrainChecks: checks.filter((check) => check.splitBrain > 0),
  };
}
