/**
 * bench:scale's record and its rendering: the tables the benchmark prints,
 * and the generated block of docs/scale.md:
 *
 *   node test/bench/scale-report.ts RECORD.json [--doc docs/scale.md]
 *
 * prints the tables, or with --doc replaces the block between the
 * document's markers with them (the committed record is docs/scale-record.json).
 * Pure apart from that command line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ApiServerCost, ApiServerRates } from './apiserver-metrics.ts';
import { sumOf } from './apiserver-metrics.ts';

export interface ScaleRun {
  /** Operator replicas (and hooks) per namespace. */
  replicas: number;
  hooks: number;
  namespaces: number;
  /** The API server over the window with the operators' Leases renewing and no hook. */
  without: ApiServerRates;
  with: ApiServerRates;
  /** Every hook starting, 8 at a time, until the last was ready. */
  start: ApiServerCost & { readyMsP50: number; readyMsP90: number };
  hook: {
    /** CPU milliseconds per second of one hook over the window. */
    cpuMsPerSecondP50: number;
    cpuMsPerSecondP90: number;
    cpuMsPerSecondTotal: number;
    rssKiBP50: number;
    rssAnonKiBP50: number;
    rssAnonKiBMax: number;
    /** Hooks that had exited by the end of the window (each one a failure). */
    exited: number;
  };
}

export interface ScaleRecord {
  command: string;
  date: string;
  machine: string;
  kubernetes: string;
  /** The cluster's nodes, the benchmark's own node (it runs nothing) aside; absent in the records of one node before it was kept. */
  nodes?: number;
  windowSeconds: number;
  /** The cluster alone (N=0) over the window. */
  idle: ApiServerRates;
  runs: ScaleRun[];
}

const nodeCount = (nodes: number) => (nodes === 1 ? 'one node' : `${nodes} nodes`);
const mcpu = (cores: number) => `${Math.round(cores * 1000)}`;
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const fixed = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
const perSecond = (r: ApiServerRates) => sumOf(r.requestsPerSecond);
const eventsPerSecond = (r: ApiServerRates) => sumOf(r.watchEventsPerSecond);

/**
 * What the hooks' starts added: the start window's requests and CPU less what
 * the window without hooks ran at over as many seconds (the operators' Lease
 * renewals go on while the hooks start, and at 2 replicas a namespace they are
 * 150 PUTs a second at N=600). A count below that rate is 0.
 *
 * The response bytes are, for each kind of request, its bytes in the start
 * window times the share of its requests the starts added. A watch's bytes
 * are counted by the API server when the watch ends, so the WATCH bytes of the
 * window belong to other clients' watches that ended in it (the kubelets' and
 * controllers', at random): none are the starts', which only open watches.
 * Subtracting the baseline's rate of all bytes instead let one long watch of
 * the baseline window outweigh 600 starts.
 */
export function startAdded(run: ScaleRun): { requests: Record<string, number>; responseBytes: number; cpuSeconds: number } {
  const { start, without } = run;
  const requests: Record<string, number> = {};
  let responseBytes = 0;
  for (const [key, count] of Object.entries(start.requests)) {
    const added = Math.round(count - (without.requestsPerSecond[key] ?? 0) * start.seconds);
    if (added <= 0) continue;
    requests[key] = added;
    if (!key.startsWith('WATCH ')) responseBytes += ((start.responseBytesByRequest[key] ?? 0) * added) / count;
  }
  return { requests, responseBytes, cpuSeconds: Math.max(0, start.cpuSeconds - without.cpuCores * start.seconds) };
}

/** What one hook adds, from a run: the difference with and without hooks, divided by their number. */
export function perHook(run: ScaleRun) {
  const d = (f: (r: ApiServerRates) => number) => (f(run.with) - f(run.without)) / run.hooks;
  return {
    cpuMilliCores: d((r) => r.cpuCores) * 1000,
    residentKiB: d((r) => r.residentBytes) / 1024,
    watches: d((r) => r.watches),
    requestsPerSecond: d(perSecond),
    watchEventsPerSecond: d(eventsPerSecond),
    watchBytesPerSecond: d((r) => r.watchBytesPerSecond),
    startRequests: sumOf(startAdded(run).requests) / run.hooks,
    startResponseKiB: startAdded(run).responseBytes / run.hooks / 1024,
    startCpuMs: (startAdded(run).cpuSeconds / run.hooks) * 1000,
  };
}

/** The verbs and resources of the requests the hooks' start added, most first: `LIST pods 300, GET leases 300`. */
function startRequests(run: ScaleRun, top = 5): string {
  return Object.entries(startAdded(run).requests)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

/** The tables bench:scale prints and docs/scale.md holds. */
export function renderScaleTables(record: ScaleRecord): string {
  const lines: string[] = [
    `The cluster alone (N=0): API server ${mcpu(record.idle.cpuCores)} mCPU, RSS ${mib(record.idle.residentBytes)} MiB, ${record.idle.watches} watches open, ${fixed(perSecond(record.idle))} requests/s.`,
    '',
    '### The API server, without and with the hooks',
    '',
    'Over the same window on the same objects, the Leases renewing every 2 s; "per hook" is the difference divided by N.',
    '',
    '| replicas per namespace | N hooks | namespaces | CPU mCPU without → with | per hook | RSS MiB without → with | per hook KiB | watches without → with | requests/s without → with | watch events/s without → with | watch KiB/s with |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const run of record.runs) {
    const h = perHook(run);
    lines.push(
      `| ${run.replicas} | ${run.hooks} | ${run.namespaces} | ${mcpu(run.without.cpuCores)} → ${mcpu(run.with.cpuCores)} | ${fixed(h.cpuMilliCores, 2)} | ` +
        `${mib(run.without.residentBytes)} → ${mib(run.with.residentBytes)} | ${fixed(h.residentKiB, 0)} | ${run.without.watches} → ${run.with.watches} | ` +
        `${fixed(perSecond(run.without))} → ${fixed(perSecond(run.with))} | ${fixed(eventsPerSecond(run.without))} → ${fixed(eventsPerSecond(run.with))} | ${fixed(run.with.watchBytesPerSecond / 1024)} |`,
    );
  }
  lines.push(
    '',
    '### Every hook starting at once (a rollout of all of them)',
    '',
    "What the starts added: the window from the first start to the last hook ready, less what the API server served without hooks over as many seconds; the response bytes are those of the requests the starts added (the API server counts a watch's bytes when it ends, so none in the window are a start's).",
    '',
    '| replicas per namespace | N hooks | wall s | requests per hook | response KiB per hook | API server CPU ms per hook | ready p50 / p90 ms | requests (most first) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  );
  for (const run of record.runs) {
    const h = perHook(run);
    lines.push(
      `| ${run.replicas} | ${run.hooks} | ${fixed(run.start.seconds)} | ${fixed(h.startRequests)} | ${fixed(h.startResponseKiB)} | ${fixed(h.startCpuMs, 0)} | ` +
        `${Math.round(run.start.readyMsP50)} / ${Math.round(run.start.readyMsP90)} | ${startRequests(run)} |`,
    );
  }
  lines.push(
    '',
    '### Each hook, idle in its namespace',
    '',
    "Watch events a hook receives: the API server's watch events per second with hooks less without, divided by N.",
    '',
    '| replicas per namespace | N hooks | CPU ms/s p50 / p90 | watch events/s per hook | CPU ms per event | RssAnon p50 / max MiB | RSS p50 MiB | hooks exited |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const run of record.runs) {
    const h = perHook(run);
    lines.push(
      `| ${run.replicas} | ${run.hooks} | ${fixed(run.hook.cpuMsPerSecondP50, 2)} / ${fixed(run.hook.cpuMsPerSecondP90, 2)} | ${fixed(h.watchEventsPerSecond, 2)} | ` +
        `${fixed(run.hook.cpuMsPerSecondP50 / h.watchEventsPerSecond, 2)} | ${fixed(run.hook.rssAnonKiBP50 / 1024)} / ${fixed(run.hook.rssAnonKiBMax / 1024)} | ${fixed(run.hook.rssKiBP50 / 1024)} | ${run.hook.exited} |`,
    );
  }
  return lines.join('\n');
}

/** The per-hook cost of the largest run of each namespace size, times 10,000 and 100,000 hooks. */
export function renderExtrapolation(record: ScaleRecord): string {
  const largest = new Map<number, ScaleRun>();
  for (const run of record.runs) if ((largest.get(run.replicas)?.hooks ?? 0) < run.hooks) largest.set(run.replicas, run);
  const lines = [
    '| replicas per namespace | from N | hooks | API server CPU cores | API server RSS GiB | watches | requests/s | watch events/s | watch MiB/s | a rollout of all: requests, response GiB |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const run of largest.values()) {
    const h = perHook(run);
    for (const n of [10_000, 100_000]) {
      lines.push(
        `| ${run.replicas} | ${run.hooks} | ${n.toLocaleString('en')} | ${fixed((h.cpuMilliCores * n) / 1000)} | ${fixed((h.residentKiB * n) / 2 ** 20)} | ${Math.round(h.watches * n).toLocaleString('en')} | ` +
          `${Math.round(h.requestsPerSecond * n).toLocaleString('en')} | ${Math.round(h.watchEventsPerSecond * n).toLocaleString('en')} | ${fixed((h.watchBytesPerSecond * n) / 2 ** 20)} | ` +
          `${Math.round(h.startRequests * n).toLocaleString('en')}, ${fixed((h.startResponseKiB * n) / 2 ** 20)} |`,
      );
    }
  }
  return lines.join('\n');
}

export const SCALE_BLOCK_BEGIN = '<!-- generated by test/bench/scale-report.ts from docs/scale-record.json: do not edit -->';
export const SCALE_BLOCK_END = '<!-- end of generated block -->';

/** The run's header line, tables and extrapolation, as docs/scale.md holds them. */
export function renderScaleBlock(record: ScaleRecord): string {
  return [
    `\`${record.command}\`, ${record.date.slice(0, 10)}; ${record.machine}; Kubernetes ${record.kubernetes}, ${nodeCount(record.nodes ?? 1)}; each steady state measured over ${record.windowSeconds} s.`,
    '',
    renderScaleTables(record),
    '',
    '### Extrapolated: the per-hook cost of the largest run of each namespace size, times the number of hooks',
    '',
    renderExtrapolation(record),
  ].join('\n');
}

/** `doc` with its generated block replaced; throws when the markers are missing. */
export function replaceScaleBlock(doc: string, record: ScaleRecord): string {
  const from = doc.indexOf(SCALE_BLOCK_BEGIN);
  const to = doc.indexOf(SCALE_BLOCK_END);
  if (from < 0 || to < from) throw new Error(`the document has no generated block (markers ${SCALE_BLOCK_BEGIN} ... ${SCALE_BLOCK_END})`);
  return `${doc.slice(0, from + SCALE_BLOCK_BEGIN.length)}\n${renderScaleBlock(record)}\n${doc.slice(to)}`;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({ options: { doc: { type: 'string' } }, allowPositionals: true });
  const file = positionals[0];
  if (!file || positionals.length > 1) {
    process.stderr.write('usage: node test/bench/scale-report.ts RECORD.json [--doc docs/scale.md]\n');
    process.exit(2);
  }
  const record = JSON.parse(readFileSync(file, 'utf8')) as ScaleRecord;
  if (values.doc) writeFileSync(values.doc, replaceScaleBlock(readFileSync(values.doc, 'utf8'), record));
  else process.stdout.write(`${renderScaleBlock(record)}\n`);
}
