/**
 * Release hooks left running in busy namespaces: does their memory level off,
 * or go on rising, and with the hours or with the events?
 *
 *   npm run bench:hook-aging -- [--minutes 60] [--leases 50] [--every 60] [--json FILE]
 *   npm run bench:hook-aging -- --leases 0,1,10,50
 *   npm run bench:hook-aging -- --minutes 40 --leases 0,10 --refuse-at 10
 *   npm run bench:hook-aging -- --leases 0,50 --node-flags=--optimize-for-size
 *
 * Each hook (the compiled `leaderhook release`, under `node --trace-gc`) runs
 * as the pod of a leader-for-life operator whose ConfigMap lock it follows,
 * in a namespace of its own where K other operator pods each hold a Lease
 * renewed every 2 s as controller-runtime renews it: every renewal is a watch
 * event the hook receives, decodes and drops, and each Lease's holder is a pod
 * the hook watches by name. A namespace with one such operator sends a hook
 * 0.5 events/s; 50 Leases send it 25/s, so an hour there is the events of 50
 * hours of the one (not the time: the watches' own restarts and the timers
 * run at their real pace). `--leases` takes a list: one hook per count, side
 * by side for the same minutes, so what a Lease followed costs a hook at
 * ready, and whether its growth follows the events or the hours, come from
 * one run.
 *
 * Each hook runs in a memory cgroup of its own with the hook container's
 * default limit (`--memory-limit`), as in its pod: Node reads the limit and
 * V8 sizes its heap from it (a 259 MB heap limit under 96 MiB, 4 GB on a
 * machine of 24 GiB without one), so how much garbage a hook lets pile up
 * before a major collection is the pod's. The cgroup's working set (what the
 * kubelet counts) is read beside RssAnon. `--node-flags` runs a second hook
 * per Lease count with those Node/V8 flags on its command, side by side with
 * the one without, in a namespace of its own beside as many Leases.
 *
 * Each hook serves its metrics (LEADERHOOK_METRICS_PORT, as a pod annotated
 * leaderhook.io/hook-metrics-port has it, and as the soak's hooks run). Every
 * `--every` seconds it records each hook's RssAnon and VmRSS
 * (/proc/PID/status), its CPU time, and from its metrics its V8 heap in use
 * and the major collections so far; `--trace-gc` gives the heap each major
 * collection left (V8 writes the trace through a buffered pipe, so the values
 * are read at the end; when each came is the reading whose count rose). At the
 * end it prints them, the slope of RssAnon over the whole run and over its
 * later half (soak-analysis's, with the soak's threshold), and CPU per event.
 * With `--refuse-at M`, M minutes in, every hook's service account is
 * deleted: from then on the API server refuses each request (401), as when a
 * pod's token has expired or its account was removed, and the readings show
 * what a hook that keeps retrying holds. Last, a full collection is forced in
 * each hook through its inspector (opened then, on SIGUSR1) and the hook read
 * once more: what of its growth was garbage V8 had not collected yet, and
 * what it holds.
 * Refuses to run outside the cluster's network namespace.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import {
  admin,
  createFakeNode,
  createLease,
  createLock,
  createNamespace,
  createPod,
  deleteNode,
  sleep,
  type TestNamespace,
} from '../integration/releaser/harness.ts';
import { type HookProcess, startHookProcess } from '../integration/releaser/hook-process.ts';
import { freePort } from '../peers/webhook/process.ts';
import { compileLeaderhook, heapAfterMarkCompact } from '../support/compiled-leaderhook.ts';
import { connectTestCluster, refuseLeftovers } from '../support/kube.ts';
import { forceFullCollection } from '../support/full-collection.ts';
import { injectionFlags } from '../../src/commands/flags.ts';
import { quantityValue } from '../../src/injector/quantity.ts';
import { cpuSecondsOf, memoryOf, socketsOf } from '../support/process-stats.ts';
import { parseExposition } from './apiserver-metrics.ts';
import { optionsOrExit, parseBenchArgs } from './bench-args.ts';
import { cgroupDirsOf, readCgroup } from './container-cgroup.ts';
import { createMemoryCgroup, type MemoryCgroup } from './memory-cgroup.ts';
import { RENEW_EVERY_MS, type RenewedLease, renewedLease, renewLeases } from './lease-renewer.ts';
import { judgedSlope, LEAK_THRESHOLD_BYTES_PER_HOUR, laterHalf, type MemorySample } from './soak-analysis.ts';
import { heapFigures, watchStates } from './soak-samples.ts';

/** The hook container's default memory limit, in MiB: each hook's cgroup has it unless told otherwise. */
const HOOK_MEMORY_LIMIT_MIB = (() => {
  const limit = injectionFlags.find((flag) => flag.name === 'hook-memory-limit')?.default ?? '';
  const bytes = quantityValue(limit);
  if (bytes === undefined) throw new Error(`the hook's default memory limit "${limit}" is not a quantity`);
  return Math.ceil(bytes / 2 ** 20);
})();

const usage = `usage: npm run bench:hook-aging -- [--minutes 60] [--leases 50] [--every 60] [--memory-limit MiB] [--node-flags=FLAGS] [--json FILE]

  --minutes M   how long the hooks run once ready (default 60)
  --leases LIST other operators' Leases in a hook's namespace, each renewed every 2 s (default 50);
                a list (0,1,10,50) runs one hook per count, each in a namespace of its own, side by side
  --every S     seconds between readings (default 60)
  --refuse-at M minutes after ready at which every hook's service account is deleted, so that the
                API server refuses each request of theirs from then on (401), as when a token has
                expired or the account was removed; 0 (default) never
  --memory-limit MiB
                the memory cgroup limit each hook runs under, as its container's (default ${HOOK_MEMORY_LIMIT_MIB}, the
                hook's default limit); 0 runs them without a cgroup
  --node-flags=FLAGS
                Node/V8 flags (each starting with --) for a second hook per Lease count, beside the one
                without them; give them after =, as they start with --
  --json FILE   write the readings there (a new file)
`;

const args = optionsOrExit('bench:hook-aging', usage, () =>
  parseBenchArgs(usage, {
    minutes: { default: 60, min: 1 },
    leases: { default: [50], min: 0 },
    every: { default: 60, min: 5 },
    'refuse-at': { default: 0, min: 0 },
    'memory-limit': { default: HOOK_MEMORY_LIMIT_MIB, min: 0 },
    'node-flags': { default: '' },
  }),
);
const { minutes, leases: leaseCounts, every: everySeconds, 'refuse-at': refuseAtMinutes, 'memory-limit': memoryLimitMiB } = args;
const nodeFlags = args['node-flags'].split(/\s+/).filter((flag) => flag !== '');
const notFlags = nodeFlags.filter((flag) => !flag.startsWith('--'));
if (notFlags.length > 0) throw new Error(`--node-flags takes Node/V8 flags, each starting with --; got ${notFlags.join(' ')}\n${usage}`);
/** The flags each Lease count's hooks run with: none, and the ones asked for. */
const flagVariants: string[][] = nodeFlags.length > 0 ? [[], nodeFlags] : [[]];
if (refuseAtMinutes >= minutes) throw new Error(`--refuse-at ${refuseAtMinutes} must come before the end of the run (--minutes ${minutes})\n${usage}`);

connectTestCluster();
await refuseLeftovers('bench:hook-aging');

const progress = (line: string) => process.stderr.write(`[hook-aging] ${line}\n`);

/** A hook at one moment of the run. */
interface AgingReading {
  atS: number;
  anonKiB: number;
  rssKiB: number;
  cpuSeconds: number;
  /** The V8 heap in use (nodejs_heap_size_used_bytes), in MB; absent, as the next two, where the metrics did not answer. */
  heapUsedMB?: number;
  /** The V8 heap committed (nodejs_heap_size_total_bytes), in MB: what of RssAnon the heap holds, used or not. */
  heapTotalMB?: number;
  /** Memory outside the heap that JavaScript objects hold (nodejs_external_memory_bytes: Buffers), in MB. */
  externalMB?: number;
  /** Its cgroup's working set (usage less inactive file pages, as the kubelet counts it) and anonymous part; absent without a cgroup. */
  workingSetKiB?: number;
  cgroupAnonKiB?: number;
  /** Its open sockets: one a watch (and one for its metrics). */
  sockets: number;
  /** Its watches not connected (leaderhook_hook_watch_up 0) by name; absent where the metrics did not answer. */
  watchesDown?: string[];
  /** Renewals of its namespace's Leases so far: each a watch event to the hook. */
  renewals: number;
  majorGcs: number;
}

/** One hook's run: the Leases beside it and what it was read at. */
interface AgedHookRecord {
  leases: number;
  /** Node/V8 flags on its command beyond the `--trace-gc` and inspector port every hook here has. */
  nodeFlags: string[];
  /** The memory cgroup limit it ran under, and the OOM kills there; absent without a cgroup. */
  memoryLimitMiB?: number;
  oomKills?: number;
  readings: AgingReading[];
  /** The heap (MB) each major collection left, in order, with when it came (seconds after ready, to the reading). */
  heapAfterMajorGcs: { atS: number; mb: number }[];
  /** Absent, as the later half's, where the readings span under 30 min. */
  anonSlopeMiBPerHour?: number;
  laterHalfAnonSlopeMiBPerHour?: number;
  /** Read after a full collection forced at the end (through the hook's inspector): what it holds, its garbage gone. */
  afterFullCollection?: AgingReading;
  exitedEarly: boolean;
}

interface AgingRecord {
  command: string;
  date: string;
  node: string;
  minutes: number;
  /** Seconds after ready at which the hooks' service accounts were deleted (every request refused from then on); absent when never. */
  refusedAtS?: number;
  hooks: AgedHookRecord[];
}

/** A hook this run started, in its namespace beside its Leases. */
interface AgedHook {
  leases: RenewedLease[];
  nodeFlags: string[];
  cgroup?: MemoryCgroup;
  process: HookProcess;
  metricsPort: number;
  inspectPort: number;
  readings: AgingReading[];
  /** Read once more after a full collection forced at the end: what of its memory was garbage not collected yet. */
  afterFullCollection?: AgingReading;
}

const hasExited = (hook: HookProcess) => hook.process.exitCode !== null || hook.process.signalCode !== null;

/** The heap each major collection left, in order, from the hook's `--trace-gc` lines. */
function majorCollections(hook: HookProcess): number[] {
  const heaps: number[] = [];
  for (const line of hook.lines) {
    const after = line.level === 'raw' ? heapAfterMarkCompact(String(line.msg)) : undefined;
    if (after !== undefined) heaps.push(after);
  }
  return heaps;
}

const COMMITTED_SERIES: ReadonlySet<string> = new Set(['nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes']);

/** The hook's heap in use and committed, its external memory and major collections so far, from its metrics endpoint. */
async function heapOf(
  metricsPort: number,
): Promise<{ heapUsedBytes: number; majorGcs: number; heapTotalBytes?: number; externalBytes?: number; watchesDown: string[] }> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(5_000) });
  const text = await response.text();
  const figures = heapFigures(text);
  if (!figures) throw new Error(`the hook's metrics on port ${metricsPort} hold no nodejs_heap_size_used_bytes`);
  const committed = parseExposition(text, COMMITTED_SERIES);
  const value = (name: string) => committed.find((series) => series.name === name)?.value;
  const watchesDown = [...watchStates(text)].filter(([, up]) => !up).map(([watch]) => watch);
  return { ...figures, heapTotalBytes: value('nodejs_heap_size_total_bytes'), externalBytes: value('nodejs_external_memory_bytes'), watchesDown };
}

/** Stops the hook as its kubelet would (SIGTERM, then SIGKILL after `graceMs`), so its trace's last buffered lines are written. */
async function stopHook(hook: HookProcess, graceMs = 5_000): Promise<void> {
  if (hasExited(hook)) return;
  hook.process.kill('SIGTERM');
  const killer = setTimeout(() => hook.process.kill('SIGKILL'), graceMs);
  await hook.exited;
  clearTimeout(killer);
}

const MIB = 2 ** 20;
/** The slope of RssAnon in MiB/h, where the samples span long enough to judge (as in the soak). */
const slopeMiBPerHour = (samples: readonly MemorySample[]): number | undefined => {
  const slope = judgedSlope(samples);
  return slope && slope.bytesPerHour / MIB;
};

/** Deletes the service account the hook of `ns` runs as: the API server refuses its token from then on. */
async function deleteServiceAccount(ns: TestNamespace): Promise<void> {
  const kube = await admin();
  await kube.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns.name}/serviceaccounts/${ns.serviceAccount}` });
}

/** A namespace of `leaseCount` Lease holders and one leader-for-life operator pod, and its hook started with `flags` and ready. */
async function startAgedHook(cli: string, node: string, leaseCount: number, flags: string[], namespaces: TestNamespace[], hooks: AgedHook[]): Promise<void> {
  // the hooks' token must outlast the run: after it expires every request of theirs is refused, and their watches stop
  const ns = await createNamespace(`lh-aging-${leaseCount}`, undefined, { tokenSeconds: (minutes + 60) * 60 });
  namespaces.push(ns);
  const leases: RenewedLease[] = [];
  for (let i = 0; i < leaseCount; i++) {
    const pod = await createPod(ns.name, `other-${i}`, node);
    leases.push(renewedLease(await createLease(ns.name, `other-lock-${i}`, `${pod.metadata?.name}_${randomUUID()}`)));
  }
  const pod = await createPod(ns.name, 'op-0', node);
  await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
  const metricsPort = await freePort();
  // the inspector opens only at the end, on SIGUSR1, for the full collection
  const inspectPort = await freePort();
  const cgroup = memoryLimitMiB > 0 ? createMemoryCgroup(`leaderhook-aging-${ns.name}`, memoryLimitMiB) : undefined;
  const hook = startHookProcess(
    cli,
    ns,
    pod,
    ['--trace-gc', `--inspect-port=127.0.0.1:${inspectPort}`, ...flags],
    { LEADERHOOK_METRICS_PORT: String(metricsPort) },
    cgroup?.wrap,
  );
  // in the list before it is ready, so that the run's end stops it and removes its cgroup whatever happens next
  hooks.push({ leases, nodeFlags: flags, ...(cgroup ? { cgroup } : {}), process: hook, metricsPort, inspectPort, readings: [] });
  await hook.ready;
  progress(`hook ready in ${ns.name} beside ${leaseCount} Leases${flags.length > 0 ? ` with ${flags.join(' ')}` : ''}`);
}

/** The hook beside its Leases, and its flags where it has some: how the output names it. */
const hookName = (leases: number, flags: readonly string[]) => `${leasesText(leases)}${flags.length > 0 ? ` ${flags.join(' ')}` : ''}`;

/** One hook read now; undefined for a hook that has exited. */
async function readingOf(hook: AgedHook, atS: number): Promise<AgingReading | undefined> {
  if (hasExited(hook.process)) return undefined;
  const heap = await heapOf(hook.metricsPort).catch((err: unknown) => {
    // one unanswered read is a gap in the heap's column, not the end of an hour's run
    progress(`reading the metrics of the hook beside ${hook.leases.length} Leases failed (${String(err).slice(0, 160)})`);
    return undefined;
  });
  if (hasExited(hook.process)) return undefined;
  const pid = hook.process.process.pid as number;
  let proc: { anonKiB: number; rssKiB: number; sockets: number; cpuSeconds: number; workingSetKiB?: number; cgroupAnonKiB?: number };
  try {
    proc = { ...memoryOf(pid), sockets: socketsOf(pid), cpuSeconds: cpuSecondsOf(pid) };
    if (hook.cgroup) {
      const charged = readCgroup(cgroupDirsOf(pid));
      proc = { ...proc, workingSetKiB: charged.workingSetBytes / 1024, cgroupAnonKiB: charged.anonBytes / 1024 };
    }
  } catch (error) {
    // a hook that exited between the check above and /proc is recorded as exited, not the end of the run
    if (hasExited(hook.process) || (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const { anonKiB, rssKiB, sockets, cpuSeconds, workingSetKiB, cgroupAnonKiB } = proc;
  return {
    atS,
    anonKiB,
    rssKiB,
    ...(workingSetKiB === undefined ? {} : { workingSetKiB, cgroupAnonKiB }),
    sockets,
    cpuSeconds,
    ...(heap ? { heapUsedMB: heap.heapUsedBytes / 1e6 } : {}),
    ...(heap?.heapTotalBytes === undefined ? {} : { heapTotalMB: heap.heapTotalBytes / 1e6 }),
    ...(heap?.externalBytes === undefined ? {} : { externalMB: heap.externalBytes / 1e6 }),
    ...(heap ? { watchesDown: heap.watchesDown } : {}),
    renewals: hook.leases.reduce((sum, l) => sum + l.renewed, 0),
    majorGcs: heap?.majorGcs ?? hook.readings.at(-1)?.majorGcs ?? 0,
  };
}

/** Reads one hook now into its readings; a hook that has exited is not read. */
async function read(hook: AgedHook, atS: number): Promise<void> {
  const reading = await readingOf(hook, atS);
  if (reading) hook.readings.push(reading);
}

/** Forces a full collection in a hook still running and reads it again, apart from its readings; one that fails is said and skipped. */
async function collectAndRead(hook: AgedHook, atS: number): Promise<void> {
  if (hasExited(hook.process)) return;
  try {
    await forceFullCollection(hook.process.process.pid as number, hook.inspectPort);
  } catch (error) {
    progress(`the full collection in the hook beside ${hook.leases.length} Leases failed (${String(error).slice(0, 160)})`);
    return;
  }
  const reading = await readingOf(hook, atS);
  if (reading) hook.afterFullCollection = reading;
}

/** The record of a hook stopped at the end of the run; `exitedEarly` where it had exited before. */
function recordOf(hook: AgedHook, exitedEarly: boolean): AgedHookRecord {
  const { readings } = hook;
  if (readings.length === 0) {
    const lastLines = hook.process.lines.slice(-5).map((line) => JSON.stringify(line));
    throw new Error(
      `the hook beside ${hook.leases.length} Leases exited (${hook.process.process.exitCode ?? hook.process.process.signalCode}) before its first reading; its last lines: ${lastLines.join(' ')}`,
    );
  }
  // the i-th collection came by the first reading that counted more than i
  const heaps = majorCollections(hook.process).map((mb, i) => ({ atS: readings.find((r) => r.majorGcs > i)?.atS ?? Number.NaN, mb }));
  const samples = readings.map((r) => ({ atMs: r.atS * 1000, bytes: r.anonKiB * 1024 }));
  const anonSlopeMiBPerHour = slopeMiBPerHour(samples);
  const laterHalfAnonSlopeMiBPerHour = slopeMiBPerHour(laterHalf(samples));
  return {
    leases: hook.leases.length,
    nodeFlags: hook.nodeFlags,
    ...(hook.cgroup ? { memoryLimitMiB, oomKills: hook.cgroup.oomKills() } : {}),
    readings,
    heapAfterMajorGcs: heaps,
    ...(anonSlopeMiBPerHour === undefined ? {} : { anonSlopeMiBPerHour }),
    ...(laterHalfAnonSlopeMiBPerHour === undefined ? {} : { laterHalfAnonSlopeMiBPerHour }),
    ...(hook.afterFullCollection ? { afterFullCollection: hook.afterFullCollection } : {}),
    exitedEarly,
  };
}

async function run(cli: string, node: string): Promise<AgingRecord> {
  const namespaces: TestNamespace[] = [];
  const hooks: AgedHook[] = [];
  const renewing = new AbortController();
  let renewer: Promise<void> = Promise.resolve();
  try {
    for (const leaseCount of leaseCounts) for (const flags of flagVariants) await startAgedHook(cli, node, leaseCount, flags, namespaces, hooks);
    renewer = renewLeases(
      hooks.flatMap((hook) => hook.leases),
      renewing.signal,
      progress,
    );
    progress(`${hooks.length} hooks ready, their Leases renewed every ${RENEW_EVERY_MS / 1000} s; reading them every ${everySeconds} s for ${minutes} min`);

    const started = performance.now();
    const endAt = started + minutes * 60_000;
    let refusedAtS: number | undefined;
    for (let round = 0; ; round++) {
      const atS = (performance.now() - started) / 1000;
      if (refuseAtMinutes > 0 && refusedAtS === undefined && atS >= refuseAtMinutes * 60) {
        refusedAtS = atS;
        await Promise.all(namespaces.map((ns) => deleteServiceAccount(ns)));
        progress(`${(atS / 60).toFixed(0)} min: the hooks' service accounts deleted; every request of theirs is refused from now on`);
      }
      await Promise.all(hooks.map((hook) => read(hook, atS)));
      if (hooks.every((hook) => hasExited(hook.process))) break;
      if (round % 10 === 0)
        progress(
          `${(atS / 60).toFixed(0)} min: RssAnon ${hooks.map((h) => `${((h.readings.at(-1)?.anonKiB ?? Number.NaN) / 1024).toFixed(1)} MiB beside ${hookName(h.leases.length, h.nodeFlags)}`).join(', ')}`,
        );
      const next = started + (round + 1) * everySeconds * 1000;
      if (next > endAt) break;
      await sleep(next - performance.now());
    }
    const exitedEarly = hooks.map((hook) => hasExited(hook.process));
    for (const hook of hooks) await collectAndRead(hook, (performance.now() - started) / 1000);
    // stopped before recordOf reads their traces: V8 writes the last lines on exit
    await Promise.all(hooks.map((hook) => stopHook(hook.process)));
    return {
      command: `npm run bench:hook-aging -- ${process.argv.slice(2).join(' ')}`.trim(),
      date: new Date().toISOString(),
      node: process.version,
      minutes,
      ...(refusedAtS === undefined ? {} : { refusedAtS }),
      hooks: hooks.map((hook, i) => recordOf(hook, exitedEarly[i] as boolean)),
    };
  } finally {
    renewing.abort();
    await renewer;
    await Promise.all(hooks.map((hook) => stopHook(hook.process, 0)));
    for (const hook of hooks) hook.cgroup?.remove();
    for (const ns of namespaces) await ns.cleanup();
  }
}

const slopeText = (mibPerHour: number | undefined) => (mibPerHour === undefined ? 'not judged (under 30 min)' : `${mibPerHour.toFixed(2)} MiB/h`);
const leasesText = (n: number) => `${n} Lease${n === 1 ? '' : 's'}`;
const mib = (kib: number | undefined) => (kib === undefined ? '-' : (kib / 1024).toFixed(1));

function print(record: AgingRecord): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const spanS = Math.max(...record.hooks.map((h) => h.readings.at(-1)?.atS ?? 0));
  out(
    `# release hooks beside ${[...new Set(record.hooks.map((h) => h.leases))].join(', ')} Leases renewed every ${RENEW_EVERY_MS / 1000} s, ${(spanS / 60).toFixed(0)} min, Node ${record.node}`,
  );
  const limit = record.hooks[0]?.memoryLimitMiB;
  out(
    limit === undefined
      ? 'each hook without a memory cgroup (V8 sizes its heap for the machine)'
      : `each hook in a memory cgroup of its own, limit ${limit} MiB`,
  );
  if (record.refusedAtS !== undefined)
    out(`every request of the hooks refused (service accounts deleted) from minute ${(record.refusedAtS / 60).toFixed(0)} on`);
  out('RssAnon MiB (heap in use MB) of each hook:');
  out(`| minute | ${record.hooks.map((h) => hookName(h.leases, h.nodeFlags)).join(' | ')} |`);
  out(`| ---: | ${record.hooks.map(() => '---:').join(' | ')} |`);
  const rounds = Math.max(...record.hooks.map((h) => h.readings.length));
  const step = Math.max(1, Math.round(rounds / 20));
  for (let i = 0; i < rounds; i++) {
    if (i % step !== 0 && i !== rounds - 1) continue;
    const atS = record.hooks.map((h) => h.readings[i]?.atS).find((at) => at !== undefined) ?? 0;
    const cells = record.hooks.map((h) => {
      const r = h.readings[i];
      return r ? `${mib(r.anonKiB)} (${r.heapUsedMB?.toFixed(1) ?? '-'})` : '-';
    });
    out(`| ${(atS / 60).toFixed(0)} | ${cells.join(' | ')} |`);
  }
  for (const hook of record.hooks) {
    const first = hook.readings[0] as AgingReading;
    const last = hook.readings.at(-1) as AgingReading;
    const events = last.renewals - first.renewals;
    const hookSpanS = last.atS - first.atS;
    const anons = hook.readings.map((r) => r.anonKiB);
    const cpuMs = (last.cpuSeconds - first.cpuSeconds) * 1000;
    out(`## beside ${hookName(hook.leases, hook.nodeFlags)}`);
    out(
      `RssAnon ${mib(first.anonKiB)} → ${mib(last.anonKiB)} MiB (min ${mib(Math.min(...anons))}, max ${mib(Math.max(...anons))}), VmRSS ${mib(first.rssKiB)} → ${mib(last.rssKiB)}, ${first.sockets} → ${last.sockets} sockets; ` +
        `slope ${slopeText(hook.anonSlopeMiBPerHour)} over the run, ${slopeText(hook.laterHalfAnonSlopeMiBPerHour)} over its later half ` +
        `(a leak above ${LEAK_THRESHOLD_BYTES_PER_HOUR / MIB} MiB/h)`,
    );
    const mb = (v: number | undefined) => v?.toFixed(1) ?? '-';
    if (first.workingSetKiB !== undefined) {
      const sets = hook.readings.map((r) => r.workingSetKiB ?? Number.NaN);
      out(
        `cgroup working set ${mib(first.workingSetKiB)} → ${mib(last.workingSetKiB)} MiB (max ${mib(Math.max(...sets))}), of it anonymous ${mib(first.cgroupAnonKiB)} → ${mib(last.cgroupAnonKiB)}; ` +
          `${hook.oomKills ?? 0} OOM kills under ${hook.memoryLimitMiB} MiB`,
      );
    }
    out(
      `V8 heap committed ${mb(first.heapTotalMB)} → ${mb(last.heapTotalMB)} MB, in use ${mb(first.heapUsedMB)} → ${mb(last.heapUsedMB)}, ` +
        `external ${mb(first.externalMB)} → ${mb(last.externalMB)}`,
    );
    const collected = hook.afterFullCollection;
    if (collected)
      out(
        `after a full collection forced at the end: RssAnon ${mib(last.anonKiB)} → ${mib(collected.anonKiB)} MiB, ` +
          (collected.workingSetKiB === undefined ? '' : `working set ${mib(last.workingSetKiB)} → ${mib(collected.workingSetKiB)} MiB, `) +
          `heap in use ${mb(last.heapUsedMB)} → ${mb(collected.heapUsedMB)} MB, committed ${mb(last.heapTotalMB)} → ${mb(collected.heapTotalMB)}`,
      );
    out(
      `heap after each major collection: ${hook.heapAfterMajorGcs.map((h) => `${h.mb} MB ${Number.isNaN(h.atS) ? 'at the end' : `by ${(h.atS / 60).toFixed(0)} min`}`).join(', ') || 'none'}`,
    );
    out(
      `events: ${events} renewals (${hookSpanS > 0 ? (events / hookSpanS).toFixed(1) : '-'}/s); CPU ${cpuMs.toFixed(0)} ms, ` +
        `${events > 0 ? (cpuMs / events).toFixed(3) : '-'} ms per event`,
    );
    const down = hook.readings.filter((r) => (r.watchesDown?.length ?? 0) > 0);
    if (down.length > 0)
      out(
        `WATCHES DOWN in ${down.length} of ${hook.readings.length} readings, from minute ${((down[0] as AgingReading).atS / 60).toFixed(0)} (${(down[0] as AgingReading).watchesDown?.join(', ')}): the events stopped reaching it`,
      );
    if (hook.exitedEarly) out('THIS HOOK EXITED BEFORE THE END: see its log above');
  }
  // a Lease's cost is read between hooks of the same command
  const byLeases = record.hooks.filter((hook) => hook.nodeFlags.length === 0).sort((a, b) => a.leases - b.leases);
  const fewest = byLeases[0] as AgedHookRecord;
  const most = byLeases.at(-1) as AgedHookRecord;
  if (most.leases > fewest.leases) {
    const change = (hook: AgedHookRecord, pick: (r: AgingReading) => number) =>
      pick(hook.readings.at(-1) as AgingReading) - pick(hook.readings[0] as AgingReading);
    const perLease = (pick: (h: AgedHookRecord) => AgingReading | undefined) =>
      (((pick(most)?.anonKiB ?? Number.NaN) - (pick(fewest)?.anonKiB ?? Number.NaN)) / 1024 / (most.leases - fewest.leases)).toFixed(2);
    // the hook beside fewer Leases spends the same on its timers and watch restarts: the difference is the events'
    const cpuMsPerEvent =
      ((change(most, (r) => r.cpuSeconds) - change(fewest, (r) => r.cpuSeconds)) * 1000) /
      (change(most, (r) => r.renewals) - change(fewest, (r) => r.renewals));
    out(
      `per Lease followed (${most.leases} against ${fewest.leases}): ${perLease((h) => h.readings[0])} MiB of RssAnon at ready, ` +
        `${perLease((h) => h.readings.at(-1))} MiB at the end; ${cpuMsPerEvent.toFixed(3)} ms of CPU per event beyond the other's`,
    );
  }
}

const cli = compileLeaderhook();
const node = await createFakeNode();
try {
  const record = await run(cli, node);
  print(record);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(record, null, 1)}\n`, { flag: 'wx' });
  if (record.hooks.some((hook) => hook.exitedEarly)) process.exitCode = 1;
} finally {
  await deleteNode(node);
}
