/**
 * What a watch costs the process that holds it and the API server, over
 * HTTP/1.1 (the hook's transport today: a keep-alive connection per watch)
 * and over HTTP/2 (one connection, a stream per watch, as client-go does):
 * the measurement docs/scale.md asks for before the hook changes transport.
 *
 *   npm run bench:watch-transport -- [--watches 0,10,100,200] [--settle 20] [--json FILE]
 *
 * For each transport and each count K, a fresh Node process
 * (watch-transport-child.ts) opens K metadata-only watches on pods by name,
 * as the hook watches each Lease holder, waits for every 200, collects its
 * garbage; `--settle` seconds later the benchmark reads that process's
 * RssAnon and open sockets (/proc) and the API server's goroutines, Go heap
 * in use and resident memory (its /metrics), against a reading taken before
 * the process started, then stops it. Per watch is the slope from the
 * smallest K to the largest; K = 0 is the transport's own cost (node:http2
 * loaded and a session open, or nothing). The API server's heap and RSS move
 * with its own collections, so its per-watch figures are the noisy ones;
 * goroutines are exact. Refuses to run outside the cluster's network
 * namespace, or beside another run's namespaces.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { connectTestCluster, createTestNamespace, refuseLeftovers } from '../support/kube.ts';
import { memoryOf, socketsOf } from '../support/process-stats.ts';
import { readBody, sendApiRequest } from '../support/raw-api.ts';
import { parseExposition } from './apiserver-metrics.ts';
import { optionsOrExit, parseBenchArgs } from './bench-args.ts';

const usage = `Usage: npm run bench:watch-transport -- [--watches 0,10,100,200] [--settle 20] [--json FILE]
  --watches  counts of watches each process opens, one process per count and transport
  --settle   seconds after a process's watches are open before it is read
  --json     write every reading to FILE (a new file)
`;

const options = optionsOrExit('bench:watch-transport', usage, () =>
  parseBenchArgs(usage, { watches: { default: [0, 10, 100, 200], min: 0 }, settle: { default: 20, min: 2 } }),
);
const TRANSPORTS = ['h1', 'h2'] as const;
type Transport = (typeof TRANSPORTS)[number];

interface ApiServerReading {
  goroutines: number;
  heapInuseBytes: number;
  residentBytes: number;
  podWatches: number;
}

interface Reading {
  transport: Transport;
  watches: number;
  clientAnonKiB: number;
  clientSockets: number;
  before: ApiServerReading;
  after: ApiServerReading;
}

const SERIES = new Set(['go_goroutines', 'go_memstats_heap_inuse_bytes', 'process_resident_memory_bytes', 'apiserver_longrunning_requests']);

async function readApiServer(): Promise<ApiServerReading> {
  const reading: ApiServerReading = { goroutines: 0, heapInuseBytes: 0, residentBytes: 0, podWatches: 0 };
  for (const { name, labels, value } of parseExposition(await readBody(await sendApiRequest('GET', '/metrics')), SERIES)) {
    if (name === 'go_goroutines') reading.goroutines = value;
    else if (name === 'go_memstats_heap_inuse_bytes') reading.heapInuseBytes = value;
    else if (name === 'process_resident_memory_bytes') reading.residentBytes = value;
    else if (labels.verb === 'WATCH' && labels.resource === 'pods') reading.podWatches += value;
  }
  return reading;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (at most `timeoutMs`) until the API server's pod watches are back to `count`, as a stopped process's are closed. */
async function podWatchesBackTo(count: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = (await readApiServer()).podWatches;
    if (now <= count) return;
    if (Date.now() > deadline) throw new Error(`the API server still counts ${now} pod watches ${timeoutMs / 1000} s after the process stopped, not ${count}`);
    await sleep(500);
  }
}

/** Runs one child to `settled`, reads it and the API server, stops it. */
async function measure(transport: Transport, watches: number, namespace: string): Promise<Reading> {
  const before = await readApiServer();
  const child = spawn(
    process.execPath,
    ['--expose-gc', new URL('./watch-transport-child.ts', import.meta.url).pathname, transport, String(watches), namespace],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const lines = createInterface({ input: child.stdout });
    let settled = false;
    for await (const line of lines) {
      const said = JSON.parse(line) as { settled?: boolean; error?: string };
      if (said.error) throw new Error(`${transport} with ${watches} watches: ${said.error}`);
      if (said.settled) {
        settled = true;
        break;
      }
    }
    if (!settled) throw new Error(`${transport} with ${watches} watches: the process ended its output (exit ${await exited}) before its watches were open`);
    await sleep(options.settle * 1000);
    const memory = memoryOf(child.pid as number);
    const clientSockets = socketsOf(child.pid as number);
    const after = await readApiServer();
    return { transport, watches, clientAnonKiB: memory.anonKiB, clientSockets, before, after };
  } finally {
    child.kill('SIGTERM');
    await exited;
    await podWatchesBackTo(before.podWatches);
  }
}

const mib = (bytes: number) => bytes / 1048576;
const fixed = (n: number, digits = 1) => n.toFixed(digits);

function render(readings: readonly Reading[]): string {
  const rows = readings.map((r) =>
    [
      r.transport,
      r.watches,
      fixed(r.clientAnonKiB / 1024),
      r.clientSockets,
      r.after.podWatches - r.before.podWatches,
      r.after.goroutines - r.before.goroutines,
      fixed(mib(r.after.heapInuseBytes - r.before.heapInuseBytes)),
      fixed(mib(r.after.residentBytes - r.before.residentBytes)),
    ].join(' | '),
  );
  const perWatch = TRANSPORTS.map((transport) => {
    const mine = readings.filter((r) => r.transport === transport).sort((a, b) => a.watches - b.watches);
    const [low, high] = [mine[0], mine.at(-1)];
    if (!low || !high || high.watches === low.watches) return `${transport}: one count only, no slope`;
    const k = high.watches - low.watches;
    const delta = (r: Reading, f: (a: ApiServerReading) => number) => f(r.after) - f(r.before);
    return [
      `${transport} per watch (K ${low.watches} -> ${high.watches}):`,
      `process ${fixed((high.clientAnonKiB - low.clientAnonKiB) / k)} KiB RssAnon, ${fixed((high.clientSockets - low.clientSockets) / k, 2)} sockets;`,
      `API server ${fixed((delta(high, (a) => a.goroutines) - delta(low, (a) => a.goroutines)) / k, 2)} goroutines,`,
      `${fixed((delta(high, (a) => a.heapInuseBytes) - delta(low, (a) => a.heapInuseBytes)) / k / 1024)} KiB heap in use,`,
      `${fixed((delta(high, (a) => a.residentBytes) - delta(low, (a) => a.residentBytes)) / k / 1024)} KiB resident`,
    ].join(' ');
  });
  return [
    'transport | watches | process RssAnon MiB | process sockets | API server: pod watches + | goroutines + | heap in use + MiB | resident + MiB',
    '--- | ---: | ---: | ---: | ---: | ---: | ---: | ---:',
    ...rows,
    '',
    ...perWatch,
  ].join('\n');
}

connectTestCluster();
await refuseLeftovers('bench:watch-transport');
const namespace = await createTestNamespace('lh-watch-transport');
const readings: Reading[] = [];
try {
  // interleaved, so that the API server's drift over the run falls on both transports alike
  for (const watches of options.watches) {
    for (const transport of TRANSPORTS) {
      const reading = await measure(transport, watches, namespace.name);
      readings.push(reading);
      process.stderr.write(
        `[watch-transport] ${transport} ${watches} watches: process ${fixed(reading.clientAnonKiB / 1024)} MiB, ${reading.clientSockets} sockets; API server +${reading.after.goroutines - reading.before.goroutines} goroutines\n`,
      );
    }
  }
} finally {
  await namespace.cleanup();
}
console.log(render(readings));
if (options.json)
  writeFileSync(options.json, `${JSON.stringify({ at: new Date().toISOString(), node: process.version, settleS: options.settle, readings }, null, 2)}\n`);
