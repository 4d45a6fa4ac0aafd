/**
 * The soak's analysis: memory slopes and the leak verdict over a noisy
 * sawtooth, leaderless stretches, and the totals of a record: faults per mode,
 * restarts the soak caused or not, watches left down.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cpuMilliCores,
  gapsAfterFaults,
  heapAfterMajorGcs,
  judgedSlope,
  LEAK_THRESHOLD_BYTES_PER_HOUR,
  laterHalf,
  leaderGaps,
  leakVerdict,
  longestGap,
  type MemorySample,
  memorySeries,
  memorySlope,
  NO_FAULT,
  parseSoakRecords,
  type SoakRecord,
  soakTotals,
} from '../bench/soak-analysis.ts';
import { mulberry32 } from '../bench/soak-plan.ts';

const MiB = 2 ** 20;
const HOUR = 3_600_000;

/**
 * A working set sampled every 10 s for `hours`: 40 MiB, a GC sawtooth that
 * fills 4 MiB over 3 to 7 minutes then drops, ±0.5 MiB of noise, and
 * `growthPerHour` underneath.
 */
function workingSet(hours: number, growthPerHour: number, seed = 1): MemorySample[] {
  const random = mulberry32(seed);
  const samples: MemorySample[] = [];
  let cycleStart = 0;
  let cycleMs = 300_000;
  for (let atMs = 0; atMs <= hours * HOUR; atMs += 10_000) {
    if (atMs - cycleStart >= cycleMs) [cycleStart, cycleMs] = [atMs, 180_000 + random() * 240_000];
    const heap = (4 * MiB * (atMs - cycleStart)) / cycleMs;
    samples.push({ atMs, bytes: 40 * MiB + heap + (random() - 0.5) * MiB + (growthPerHour * atMs) / HOUR });
  }
  return samples;
}

test('the slope of a straight line is its growth per hour, with r² 1', () => {
  const line = [0, 1, 2, 3].map((i) => ({ atMs: i * 20 * 60_000, bytes: 100 * MiB + i * MiB }));
  const slope = memorySlope(line);
  assert.ok(Math.abs(slope.bytesPerHour - 3 * MiB) < 1e-6, `${slope.bytesPerHour}`);
  assert.ok(Math.abs(slope.interceptBytes - 100 * MiB) < 1e-6);
  assert.equal(slope.n, 4);
  assert.ok(Math.abs(slope.r2 - 1) < 1e-12);
  assert.equal(memorySlope(line.map((s) => ({ ...s, bytes: MiB }))).r2, 1, 'a constant series is fitted exactly');
});

test('a flat sawtooth with noise stays under the leak threshold; the same with 3 MiB/h underneath grows', () => {
  for (const seed of [1, 2, 3]) {
    const flat = memorySlope(workingSet(2, 0, seed));
    assert.ok(Math.abs(flat.bytesPerHour) < LEAK_THRESHOLD_BYTES_PER_HOUR, `seed ${seed}: ${flat.bytesPerHour / MiB} MiB/h`);
    assert.ok(flat.r2 < 0.2, `seed ${seed}: a flat series is mostly noise, r² ${flat.r2}`);
  }
  const verdicts = leakVerdict(
    new Map([
      ['flat', workingSet(2, 0)],
      ['leak', workingSet(2, 3 * MiB)],
      ['short', workingSet(0.25, 3 * MiB)],
    ]),
  );
  assert.deepEqual(
    verdicts.map((result) => [result.key, result.verdict, result.thresholdBytesPerHour]),
    [
      ['flat', 'flat', MiB],
      ['leak', 'grows', MiB],
      ['short', 'too short', MiB],
    ],
  );
  assert.ok(Math.abs(verdicts[1]!.slope!.bytesPerHour - 3 * MiB) < 0.5 * MiB);
  assert.match(verdicts[2]!.reason!, /spanning at least 30 min, these span 15\.0 min/);
  assert.equal(leakVerdict(new Map([['leak', workingSet(2, 3 * MiB)]]), 4 * MiB)[0]!.verdict, 'flat', 'the threshold given is the one judged by');
});

test("a run's later half is judged alone where it is long enough: a warm-up that levels off, against a leak that goes on", () => {
  const MINUTE = 60_000;
  // 80 min sampled each minute: 8 MiB of warm-up over the first 30 min, then flat (a sawtooth of ±0.5 MiB)
  const warmUp = Array.from({ length: 81 }, (_, i) => ({ atMs: i * MINUTE, bytes: (20 + (8 * Math.min(i, 30)) / 30 + (i % 4) * 0.25) * MiB }));
  const [levelled] = leakVerdict(new Map([['warm-up', warmUp]]));
  assert.equal(levelled!.verdict, 'grows', 'the whole run is still the verdict');
  assert.ok(levelled!.laterSlope !== undefined);
  assert.ok(Math.abs(levelled!.laterSlope.bytesPerHour) < LEAK_THRESHOLD_BYTES_PER_HOUR, `${levelled!.laterSlope.bytesPerHour / MiB} MiB/h`);
  assert.equal(levelled!.laterSlope.n, 41, 'the later half: minutes 40 to 80');
  // the same 80 min growing 6 MiB/h throughout: the later half grows as much
  const [leak] = leakVerdict(new Map([['leak', Array.from({ length: 81 }, (_, i) => ({ atMs: i * MINUTE, bytes: 20 * MiB + (6 * MiB * i) / 60 }))]]));
  assert.ok(Math.abs(leak!.laterSlope!.bytesPerHour - 6 * MiB) < 1, `${leak!.laterSlope!.bytesPerHour / MiB} MiB/h`);
  // a 50-min run is judged, its 25-min later half is not
  const [short] = leakVerdict(new Map([['short', warmUp.slice(0, 51)]]));
  assert.equal(short!.verdict, 'grows');
  assert.equal(short!.laterSlope, undefined);
  assert.deepEqual(laterHalf([]), []);
  assert.deepEqual(
    laterHalf([
      { atMs: 30, bytes: 3 },
      { atMs: 0, bytes: 1 },
      { atMs: 10, bytes: 2 },
    ]).map((sample) => sample.atMs),
    [30],
    'by time, not by order: the half after the middle of the span',
  );
});

test('a slope needs 3 samples spanning the minimum', () => {
  assert.throws(() => memorySlope([]), /a memory slope needs at least 3 samples, got 0/);
  assert.throws(() => memorySlope(workingSet(1, 0).slice(0, 2)), /a memory slope needs at least 3 samples, got 2/);
  assert.throws(() => memorySlope(workingSet(0.1, 0)), /a memory slope needs samples spanning at least 30 min, these span 6\.0 min/);
  assert.equal(memorySlope(workingSet(0.1, 0), 5 * 60_000).n, 37, 'a smaller minimum can be given');
  assert.throws(() => memorySlope([...workingSet(1, 0), { atMs: 0, bytes: Number.NaN }]), /a memory sample has a time or size that is not a number/);
});

test('leaderless stretches per namespace, an open one running to the end', () => {
  const gaps = leaderGaps(
    [
      { atMs: 0, namespace: 'a', leader: 'a-1' },
      { atMs: 0, namespace: 'b', leader: undefined },
      { atMs: 1000, namespace: 'a', leader: undefined },
      { atMs: 1500, namespace: 'a', leader: undefined },
      { atMs: 2000, namespace: 'b', leader: 'b-1' },
      { atMs: 2500, namespace: 'a', leader: 'a-2' },
      { atMs: 3000, namespace: 'c', leader: 'c-1' },
      { atMs: 4000, namespace: 'a', leader: undefined },
    ],
    5000,
  );
  assert.deepEqual(Object.fromEntries(gaps), {
    a: [
      { fromMs: 1000, toMs: 2500, ms: 1500, open: false },
      { fromMs: 4000, toMs: 5000, ms: 1000, open: true },
    ],
    b: [{ fromMs: 0, toMs: 2000, ms: 2000, open: false }],
    c: [],
  });
  assert.deepEqual(Object.fromEntries(longestGap(gaps)), { a: 1500, b: 2000, c: 0 });
  assert.throws(
    () =>
      leaderGaps([
        { atMs: 10, namespace: 'a', leader: 'x' },
        { atMs: 5, namespace: 'a', leader: 'x' },
      ]),
    /leader observation 2 \(5 ms\) comes before the one ahead of it \(10 ms\): they must be in time order/,
  );
});

const sample = (atMs: number, pod: string, container: string, restarts: number, bytes = 40 * MiB): SoakRecord => ({
  kind: 'sample',
  atMs,
  pod,
  container,
  namespace: 'ns',
  workingSetBytes: bytes,
  restarts,
});
const fault = (atMs: number, name: string, target: string, extra: Partial<SoakRecord> = {}): SoakRecord =>
  ({ kind: 'fault', atMs, fault: name, target, namespace: 'ns', withLeaderhook: true, outcome: 'applied', ...extra }) as SoakRecord;

test("a restart right after a crash or kill of that container is the soak's; one without such a fault is not", () => {
  const hook = 'leaderhook-release';
  const totals = soakTotals([
    sample(0, 'p', hook, 0),
    sample(0, 'q', hook, 2),
    sample(0, 'p', 'manager', 0),
    fault(9_000, 'kill-hook', 'p'),
    sample(10_000, 'p', hook, 1),
    // the operator crashed: its restart is explained, not the hook's in the same pod
    fault(20_000, 'crash-operator', 'p'),
    sample(30_000, 'p', 'manager', 1),
    sample(30_000, 'p', hook, 2),
    // a skipped fault and one on another pod explain nothing
    fault(40_000, 'kill-hook', 'q', { outcome: 'skipped' }),
    fault(40_000, 'kill-hook', 'r'),
    sample(50_000, 'q', hook, 3),
    // nor one more than a window before the sample ahead of the restart
    fault(80_000, 'kill-hook', 'p'),
    sample(150_000, 'p', hook, 2),
    sample(200_000, 'p', hook, 3),
    // one kill accounts for one restart
    fault(210_000, 'kill-hook', 'p'),
    sample(220_000, 'p', hook, 5),
  ]);
  assert.equal(totals.causedRestarts, 3);
  assert.deepEqual(
    totals.uncausedRestarts.map((restart) => [restart.pod, restart.container, restart.kind, restart.seenAtMs]),
    [
      ['p', hook, 'hook', 30_000],
      ['q', hook, 'hook', 50_000],
      ['p', hook, 'hook', 200_000],
      ['p', hook, 'hook', 220_000],
    ],
    'restarts before the first sample (q had 2) are its baseline',
  );
  const late = [sample(0, 'p', hook, 0), fault(50_000, 'kill-hook', 'p'), sample(150_000, 'p', hook, 0), sample(200_000, 'p', hook, 1)];
  assert.equal(soakTotals(late).causedRestarts, 0);
  assert.equal(soakTotals(late, 120_000).causedRestarts, 1, 'the window given is the one used');
});

test('faults are counted per kind and mode, cluster-wide ones apart, skipped and failed ones apart, unknown kinds last', () => {
  const totals = soakTotals([
    fault(1, 'evict', 'p', { withLeaderhook: false }),
    fault(2, 'delete-leader', 'p'),
    fault(3, 'delete-leader', 'p', { outcome: 'skipped' }),
    fault(4, 'restart-apiserver', 'kube-apiserver', { withLeaderhook: true }),
    fault(5, 'zap', 'p'),
    fault(6, 'kill-hook', 'p', { outcome: 'failed' }),
  ]);
  const none = { with: 0, without: 0, cluster: 0 };
  assert.deepEqual(totals.faults, [
    { fault: 'delete-leader', applied: { with: 1, without: 0, cluster: 0 }, skipped: { with: 1, without: 0, cluster: 0 }, failed: none },
    { fault: 'evict', applied: { with: 0, without: 1, cluster: 0 }, skipped: none, failed: none },
    { fault: 'kill-hook', applied: none, skipped: none, failed: { with: 1, without: 0, cluster: 0 } },
    { fault: 'restart-apiserver', applied: { with: 0, without: 0, cluster: 1 }, skipped: none, failed: none },
    { fault: 'zap', applied: { with: 1, without: 0, cluster: 0 }, skipped: none, failed: none },
  ]);
});

test('split brain, unobserved stretches, locks held by dead pods and the longest leaderless stretch are totalled per mode', () => {
  const check = (withLeaderhook: boolean, splitBrain: number, lockHeldByDeadPod: number, leaderlessMs: number, unobserved?: number): SoakRecord => ({
    kind: 'check',
    atMs: 0,
    namespace: withLeaderhook ? 'with' : 'without',
    withLeaderhook,
    splitBrain,
    ...(unobserved === undefined ? {} : { unobserved }),
    lockHeldByDeadPod,
    leaderlessMs,
  });
  const totals = soakTotals([check(true, 0, 0, 900, 2), check(true, 1, 0, 300), check(false, 2, 1, 17_000, 1), check(false, 0, 1, 0, 0)]);
  assert.deepEqual(totals.withLeaderhook, { checks: 2, splitBrain: 1, unobserved: 2, lockHeldByDeadPod: 0, longestLeaderlessMs: 900 });
  assert.deepEqual(totals.withoutLeaderhook, { checks: 2, splitBrain: 2, unobserved: 1, lockHeldByDeadPod: 2, longestLeaderlessMs: 17_000 });
  assert.deepEqual(soakTotals([check(true, 0, 0, 5)]).withoutLeaderhook, { checks: 0, splitBrain: 0, unobserved: 0, lockHeldByDeadPod: 0 });
});

test("an API server restart explains any number of operator restarts, in any pod, within the window; not a hook's", () => {
  const hook = 'leaderhook-release';
  const totals = soakTotals([
    sample(0, 'p', 'operator', 0),
    sample(0, 'q', 'operator', 0),
    sample(0, 'p', hook, 0),
    fault(5_000, 'restart-apiserver', 'kube-apiserver', { namespace: '' }),
    sample(60_000, 'p', 'operator', 2),
    sample(60_000, 'q', 'operator', 1),
    sample(60_000, 'p', hook, 1),
    // a restart seen more than a window after the fault is not its doing
    sample(130_000, 'q', 'operator', 1),
    sample(200_000, 'q', 'operator', 2),
  ]);
  assert.equal(totals.causedRestarts, 3);
  assert.deepEqual(
    totals.uncausedRestarts.map((restart) => [restart.pod, restart.kind, restart.seenAtMs]),
    [
      ['p', 'hook', 60_000],
      ['q', 'operator', 200_000],
    ],
  );
});

test('a watch is left down when its last record is down and its pod ran on after it', () => {
  const watch = (atMs: number, pod: string, name: string, up: boolean): SoakRecord => ({ kind: 'watch', atMs, pod, watch: name, up });
  const totals = soakTotals([
    watch(100, 'p', 'lease', false),
    watch(200, 'p', 'lease', true),
    watch(300, 'p', 'pods', false),
    watch(300, 'gone', 'lease', false),
    sample(400, 'p', 'leaderhook-release', 0),
    sample(250, 'gone', 'leaderhook-release', 0),
  ]);
  assert.deepEqual(totals.watchesDown, [{ pod: 'p', watch: 'pods', sinceMs: 300 }]);
});

test('memory series are split by container kind and by restart', () => {
  const records = [
    sample(0, 'p', 'leaderhook-release', 0, 1),
    sample(1, 'p', 'leaderhook-release', 1, 2),
    sample(0, 'w', 'webhook', 0, 3),
    sample(0, 'p', 'manager', 0),
  ];
  assert.deepEqual(Object.fromEntries(memorySeries(records, 'hook')), {
    'ns/p/leaderhook-release#0': [{ atMs: 0, bytes: 1 }],
    'ns/p/leaderhook-release#1': [{ atMs: 1, bytes: 2 }],
  });
  assert.deepEqual([...memorySeries(records, 'webhook').keys()], ['ns/w/webhook#0']);
});

test('the anonymous series follows anonBytes and skips the samples without it', () => {
  const records: SoakRecord[] = [
    sample(0, 'p', 'leaderhook-release', 0, 40 * MiB),
    { ...(sample(60_000, 'p', 'leaderhook-release', 0, 41 * MiB) as object), anonBytes: 20 * MiB } as SoakRecord,
  ];
  assert.deepEqual(Object.fromEntries(memorySeries(records, 'hook', 'anon')), { 'ns/p/leaderhook-release#0': [{ atMs: 60_000, bytes: 20 * MiB }] });
  assert.equal(memorySeries(records, 'hook').get('ns/p/leaderhook-release#0')?.length, 2, 'the working set keeps both');
});

test("CPU in millicores comes from two samples in a row of one container's run, never across a restart or a reset", () => {
  const cpu = (atMs: number, pod: string, restarts: number, cpuNanos: number): SoakRecord =>
    ({ ...(sample(atMs, pod, 'leaderhook-release', restarts) as object), cpuNanos }) as SoakRecord;
  const records = [
    cpu(0, 'p', 0, 1e9),
    cpu(60_000, 'q', 0, 0),
    cpu(60_000, 'p', 0, 1.6e9), // 0.6 s of CPU in 60 s: 10 mCPU
    cpu(120_000, 'q', 0, 3e9), // 3 s in 60 s: 50 mCPU
    cpu(120_000, 'p', 1, 0.1e9), // restarted: a new run, no pair yet
    cpu(180_000, 'p', 1, 0.4e9), // 0.3 s in 60 s: 5 mCPU
    cpu(240_000, 'q', 0, 1e9), // went down: a restart not reported yet, left out
    sample(240_000, 'p', 'leaderhook-release', 1), // no CPU recorded
    { ...(sample(0, 'w', 'webhook', 0) as object), cpuNanos: 0 } as SoakRecord,
  ];
  assert.deepEqual(
    cpuMilliCores(records, 'hook').map((m) => Number(m.toFixed(6))),
    [10, 50, 5],
  );
  assert.deepEqual(cpuMilliCores(records, 'webhook'), [], 'one sample is no pair');
});

test('the heap after a major collection is the first reading after the count went up, per run of a container', () => {
  const heap = (atMs: number, pod: string, container: string, restarts: number, usedMiB: number, majorGcs: number): SoakRecord => ({
    kind: 'heap',
    atMs,
    namespace: 'ns',
    pod,
    container,
    heapUsedBytes: usedMiB * MiB,
    majorGcs,
    restarts,
  });
  const records = [
    heap(0, 'p', 'leaderhook-release', 0, 10, 3), // a run's first reading: no count before it
    heap(60_000, 'p', 'leaderhook-release', 0, 11, 3),
    heap(120_000, 'p', 'leaderhook-release', 0, 9, 4),
    heap(180_000, 'p', 'leaderhook-release', 0, 10, 4),
    heap(240_000, 'p', 'leaderhook-release', 0, 9.5, 6), // two collections in the minute: one floor
    heap(300_000, 'p', 'leaderhook-release', 1, 8, 3), // restarted: a new run, its first reading
    heap(360_000, 'p', 'leaderhook-release', 1, 8.5, 4),
    heap(60_000, 'w', 'webhook', 0, 15, 3),
    heap(120_000, 'w', 'webhook', 0, 12, 4),
  ];
  assert.deepEqual(Object.fromEntries(heapAfterMajorGcs(records, 'hook')), {
    'ns/p/leaderhook-release#0': [
      { atMs: 120_000, bytes: 9 * MiB },
      { atMs: 240_000, bytes: 9.5 * MiB },
    ],
    'ns/p/leaderhook-release#1': [{ atMs: 360_000, bytes: 8.5 * MiB }],
  });
  assert.deepEqual(Object.fromEntries(heapAfterMajorGcs([...records].reverse(), 'webhook')), { 'ns/w/webhook#0': [{ atMs: 120_000, bytes: 12 * MiB }] });
});

test('a record line that is not JSON is refused with its line number', () => {
  assert.equal(parseSoakRecords('{"kind":"run"}\n\n').length, 1);
  assert.throws(() => parseSoakRecords('{"kind":"run"}\n{"kind":'), /line 2 of the soak record is not JSON/);
});

test('a leaderless stretch counts against the latest fault on its namespace or cluster-wide within the window; none is a finding', () => {
  const gap = (namespace: string, withLeaderhook: boolean, fromMs: number, ms: number): SoakRecord => ({
    kind: 'gap',
    namespace,
    withLeaderhook,
    fromMs,
    toMs: fromMs + ms,
    ms,
    open: false,
  });
  const groups = gapsAfterFaults([
    fault(10_000, 'delete-leader', 'a', { namespace: 'with' }),
    fault(20_000, 'crash-operator', 'b', { namespace: 'with' }),
    fault(25_000, 'delete-leader', 'c', { namespace: 'without', withLeaderhook: false }),
    // a skipped fault is no cause
    fault(28_000, 'evict', 'd', { namespace: 'without', withLeaderhook: false, outcome: 'skipped' }),
    gap('with', true, 21_000, 4_000),
    gap('without', false, 30_000, 16_000),
    fault(200_000, 'restart-apiserver', 'kube-apiserver', { namespace: '' }),
    gap('with', true, 210_000, 14_000),
    gap('without', false, 212_000, 15_000),
    // two minutes after the last fault on its namespace and cluster-wide: nothing caused it
    gap('with', true, 400_000, 5_000),
  ]);
  assert.deepEqual(
    groups.map((group) => [group.fault, group.withLeaderhook, group.withoutLeaderhook]),
    [
      ['delete-leader', [], [16_000]],
      ['crash-operator', [4_000], []],
      ['restart-apiserver', [14_000], [15_000]],
      [NO_FAULT, [5_000], []],
    ],
  );
});

test('judgedSlope is the slope of a run long enough to judge, and undefined for a shorter one instead of a throw', () => {
  const hour = workingSet(1, 6 * MiB);
  assert.equal(judgedSlope(hour)?.bytesPerHour, memorySlope(hour).bytesPerHour);
  assert.equal(judgedSlope(hour.filter((sample) => sample.atMs < 20 * 60_000)), undefined);
});
