/**
 * One release hook left running in a busy namespace: does its memory level
 * off, or go on rising?
 *
 *   npm run bench:hook-aging -- [--minutes 60] [--leases 50] [--every 60] [--json FILE]
 *
 * The hook (the compiled `leaderhook release`, under `node --trace-gc`) runs
 * as the pod of a leader-for-life operator whose ConfigMap lock it follows,
 * in a namespace where `--leases` other operator pods each hold a Lease
 * renewed every 2 s as controller-runtime renews it: every renewal is a watch
 * event the hook receives, decodes and drops. A namespace with one such
 * operator sends a hook 0.5 events/s; 50 Leases send it 25/s, so an hour here
 * is the events of 50 hours there (not the time: the watches' own restarts
 * and the timers run at their real pace).
 *
 * The hook serves its metrics (LEADERHOOK_METRICS_PORT, as a pod annotated
 * leaderhook.io/hook-metrics-port has it, and as the soak's hooks run). Every
 * `--every` seconds it records the hook's RssAnon and VmRSS
 * (/proc/PID/status), its CPU time, and from its metrics its V8 heap in use
 * and the major collections so far; `--trace-gc` gives the heap each major
 * collection left (V8 writes the trace through a buffered pipe, so the values
 * are read at the end; when each came is the reading whose count rose). At the
 * end it prints them, the slope of RssAnon over the whole run and over its
 * later half (soak-analysis's, with the soak's threshold), and CPU per event.
 * Refuses to run outside the cluster's network namespace.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createFakeNode, createLease, createLock, createNamespace, createPod, deleteNode, sleep, type TestNamespace } from '../integration/releaser/harness.ts';
import { compile, type HookProcess, startHookProcess } from '../integration/releaser/hook-process.ts';
import { freePort } from '../peers/webhook/process.ts';
import { connectTestCluster, refuseLeftovers } from '../support/kube.ts';
import { parseBenchArgs } from './bench-args.ts';
import { heapAfterMarkCompact } from './compiled-webhook.ts';
import { cpuSecondsOf, statusKiB } from './container-cgroup.ts';
import { RENEW_EVERY_MS, type RenewedLease, renewedLease, renewLeases } from './lease-renewer.ts';
import { judgedSlope, LEAK_THRESHOLD_BYTES_PER_HOUR, laterHalf, type MemorySample } from './soak-analysis.ts';
import { heapFigures } from './soak-samples.ts';

const usage = `usage: npm run bench:hook-aging -- [--minutes 60] [--leases 50] [--every 60] [--json FILE]

  --minutes M   how long the hook runs once ready (default 60)
  --leases K    other operators' Leases in its namespace, each renewed every 2 s (default 50)
  --every S     seconds between readings (default 60)
  --json FILE   write the readings there (a new file)
`;

const args = parseBenchArgs(usage, {
  minutes: { default: 60, min: 1 },
  leases: { default: 50, min: 0 },
  every: { default: 60, min: 5 },
});
const { minutes, leases: leaseCount, every: everySeconds } = args;

connectTestCluster();
await refuseLeftovers('bench:hook-aging');

const progress = (line: string) => process.stderr.write(`[hook-aging] ${line}\n`);

/** The hook at one moment of the run. */
interface AgingReading {
  atS: number;
  anonKiB: number;
  rssKiB: number;
  cpuSeconds: number;
  /** The V8 heap in use (nodejs_heap_size_used_bytes), in MB; absent where the metrics did not answer. */
  heapUsedMB?: number;
  /** Renewals of the namespace's Leases so far: each a watch event to the hook. */
  renewals: number;
  majorGcs: number;
}

interface AgingRecord {
  command: string;
  date: string;
  node: string;
  minutes: number;
  leases: number;
  readings: AgingReading[];
  /** The heap (MB) each major collection left, in order, with when it came (seconds after ready, to the reading). */
  heapAfterMajorGcs: { atS: number; mb: number }[];
  /** Absent, as the later half's, where the readings span under 30 min. */
  anonSlopeMiBPerHour?: number;
  laterHalfAnonSlopeMiBPerHour?: number;
  exitedEarly: boolean;
}

/** The heap each major collection left, in order, from the hook's `--trace-gc` lines. */
function majorCollections(hook: HookProcess): number[] {
  const heaps: number[] = [];
  for (const line of hook.lines) {
    const after = line.level === 'raw' ? heapAfterMarkCompact(String(line.msg)) : undefined;
    if (after !== undefined) heaps.push(after);
  }
  return heaps;
}

/** The hook's heap in use and major collections so far, from its metrics endpoint. */
async function heapOf(metricsPort: number): Promise<{ heapUsedBytes: number; majorGcs: number }> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(5_000) });
  const figures = heapFigures(await response.text());
  if (!figures) throw new Error(`the hook's metrics on port ${metricsPort} hold no nodejs_heap_size_used_bytes`);
  return figures;
}

/** Stops the hook as its kubelet would (SIGTERM, then SIGKILL after `graceMs`), so its trace's last buffered lines are written. */
async function stopHook(hook: HookProcess, graceMs = 5_000): Promise<void> {
  if (hook.process.exitCode !== null || hook.process.signalCode !== null) return;
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

async function run(cli: string, node: string): Promise<AgingRecord> {
  const ns: TestNamespace = await createNamespace('lh-aging');
  const renewing = new AbortController();
  let renewer: Promise<void> = Promise.resolve();
  let hook: HookProcess | undefined;
  try {
    const leases: RenewedLease[] = [];
    for (let i = 0; i < leaseCount; i++) {
      const pod = await createPod(ns.name, `other-${i}`, node);
      leases.push(renewedLease(await createLease(ns.name, `other-lock-${i}`, `${pod.metadata?.name}_${randomUUID()}`)));
    }
    const pod = await createPod(ns.name, 'op-0', node);
    await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
    renewer = renewLeases(leases, renewing.signal, progress);
    const metricsPort = await freePort();
    hook = startHookProcess(cli, ns, pod, ['--trace-gc'], { LEADERHOOK_METRICS_PORT: String(metricsPort) });
    await hook.ready;
    const pid = hook.process.pid as number;
    const renewals = () => leases.reduce((sum, l) => sum + l.renewed, 0);
    progress(`hook ready in ${ns.name}, ${leaseCount} Leases renewed every ${RENEW_EVERY_MS / 1000} s; reading it every ${everySeconds} s for ${minutes} min`);

    const readings: AgingReading[] = [];
    const started = performance.now();
    const endAt = started + minutes * 60_000;
    for (;;) {
      const atS = (performance.now() - started) / 1000;
      if (hook.process.exitCode !== null || hook.process.signalCode !== null) break;
      const heap = await heapOf(metricsPort).catch((err: unknown) => {
        // one unanswered read is a gap in the heap's column, not the end of an hour's run
        progress(`reading the hook's metrics failed (${String(err).slice(0, 160)})`);
        return undefined;
      });
      if (hook.process.exitCode !== null || hook.process.signalCode !== null) break;
      readings.push({
        atS,
        anonKiB: statusKiB(pid, 'RssAnon'),
        rssKiB: statusKiB(pid, 'VmRSS'),
        cpuSeconds: cpuSecondsOf(pid),
        ...(heap ? { heapUsedMB: heap.heapUsedBytes / 1e6 } : {}),
        renewals: renewals(),
        majorGcs: heap?.majorGcs ?? readings.at(-1)?.majorGcs ?? 0,
      });
      const last = readings.at(-1) as AgingReading;
      if (readings.length % 10 === 1)
        progress(`${(atS / 60).toFixed(0)} min: RssAnon ${(last.anonKiB / 1024).toFixed(1)} MiB, ${last.majorGcs} major collections`);
      const next = started + readings.length * everySeconds * 1000;
      if (next > endAt) break;
      await sleep(next - performance.now());
    }
    const exitedEarly = hook.process.exitCode !== null || hook.process.signalCode !== null;
    await stopHook(hook);
    if (readings.length === 0) {
      const lastLines = hook.lines.slice(-5).map((line) => JSON.stringify(line));
      throw new Error(`the hook exited (${hook.process.exitCode ?? hook.process.signalCode}) before its first reading; its last lines: ${lastLines.join(' ')}`);
    }
    // the i-th collection came by the first reading that counted more than i
    const heaps = majorCollections(hook).map((mb, i) => ({ atS: readings.find((r) => r.majorGcs > i)?.atS ?? Number.NaN, mb }));
    const samples = readings.map((r) => ({ atMs: r.atS * 1000, bytes: r.anonKiB * 1024 }));
    const anonSlopeMiBPerHour = slopeMiBPerHour(samples);
    const laterHalfAnonSlopeMiBPerHour = slopeMiBPerHour(laterHalf(samples));
    return {
      command: `npm run bench:hook-aging -- ${process.argv.slice(2).join(' ')}`.trim(),
      date: new Date().toISOString(),
      node: process.version,
      minutes,
      leases: leaseCount,
      readings,
      heapAfterMajorGcs: heaps,
      ...(anonSlopeMiBPerHour === undefined ? {} : { anonSlopeMiBPerHour }),
      ...(laterHalfAnonSlopeMiBPerHour === undefined ? {} : { laterHalfAnonSlopeMiBPerHour }),
      exitedEarly,
    };
  } finally {
    renewing.abort();
    await renewer;
    if (hook) await stopHook(hook, 0);
    await ns.cleanup();
  }
}

const slopeText = (mibPerHour: number | undefined) => (mibPerHour === undefined ? 'not judged (under 30 min)' : `${mibPerHour.toFixed(2)} MiB/h`);

function print(record: AgingRecord): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const first = record.readings[0] as AgingReading;
  const last = record.readings.at(-1) as AgingReading;
  const events = last.renewals - first.renewals;
  const spanS = last.atS - first.atS;
  out(`# one release hook, ${record.leases} Leases renewed every ${RENEW_EVERY_MS / 1000} s beside it, ${(spanS / 60).toFixed(0)} min, Node ${record.node}`);
  out('| minute | RssAnon MiB | VmRSS MiB | heap in use MB | major collections | CPU s |');
  out('| ---: | ---: | ---: | ---: | ---: | ---: |');
  const step = Math.max(1, Math.round(record.readings.length / 20));
  for (const [i, r] of record.readings.entries())
    if (i % step === 0 || r === last)
      out(
        `| ${(r.atS / 60).toFixed(0)} | ${(r.anonKiB / 1024).toFixed(1)} | ${(r.rssKiB / 1024).toFixed(1)} | ${r.heapUsedMB?.toFixed(1) ?? '-'} | ${r.majorGcs} | ${r.cpuSeconds.toFixed(1)} |`,
      );
  const anons = record.readings.map((r) => r.anonKiB / 1024);
  out(
    `RssAnon ${anons[0]?.toFixed(1)} → ${anons.at(-1)?.toFixed(1)} MiB (min ${Math.min(...anons).toFixed(1)}, max ${Math.max(...anons).toFixed(1)}); ` +
      `slope ${slopeText(record.anonSlopeMiBPerHour)} over the run, ${slopeText(record.laterHalfAnonSlopeMiBPerHour)} over its later half ` +
      `(a leak above ${LEAK_THRESHOLD_BYTES_PER_HOUR / MIB} MiB/h)`,
  );
  out(
    `heap after each major collection: ${record.heapAfterMajorGcs.map((h) => `${h.mb} MB ${Number.isNaN(h.atS) ? 'at the end' : `by ${(h.atS / 60).toFixed(0)} min`}`).join(', ') || 'none'}`,
  );
  out(
    `events: ${events} renewals (${(events / spanS).toFixed(1)}/s); hook CPU ${((last.cpuSeconds - first.cpuSeconds) * 1000).toFixed(0)} ms, ` +
      `${events > 0 ? (((last.cpuSeconds - first.cpuSeconds) * 1000) / events).toFixed(3) : '-'} ms per event`,
  );
  if (record.exitedEarly) out('THE HOOK EXITED BEFORE THE END: see its log above');
}

const cli = compile();
const node = await createFakeNode();
try {
  const record = await run(cli, node);
  print(record);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(record, null, 1)}\n`, { flag: 'wx' });
  if (record.exitedEarly) process.exitCode = 1;
} finally {
  await deleteNode(node);
}
