/**
 * Throughput and latency of POST /mutate over TLS on loopback.
 *
 *   node test/bench/webhook.bench.ts [--requests 20000] [--concurrency 32] [--seconds 30] [--file <review.json>]
 *
 * The server runs in a child process (its own event loop and core, as in a
 * pod), with development certificates in a temporary directory and its log
 * lines written to /dev/null, so their cost is counted but not printed. The
 * client keeps `concurrency` keep-alive connections busy until `requests`
 * answers arrived or `seconds` passed, after a warm-up, and prints req/s and
 * latency percentiles. Loopback only.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';

const DEFAULT_REVIEW = new URL('../testdata/admission/kubebuilder-pod.review.json', import.meta.url);

async function serve(certsDir: string): Promise<void> {
  const { startWebhookServer } = await import('../../src/webhook/server.ts');
  const logger = pino({ level: 'info', base: { component: 'webhook' } }, pino.destination({ dest: '/dev/null', sync: false }));
  const webhook = await startWebhookServer({
    host: '127.0.0.1',
    port: 0,
    certFile: join(certsDir, 'tls.crt'),
    keyFile: join(certsDir, 'tls.key'),
    dev: true,
    certsDir,
    bodyLimitBytes: 3 * 1024 * 1024,
    logger,
    injection: {
      image: 'ghcr.io/leaderhook/leaderhook:bench',
      imagePullPolicy: 'IfNotPresent',
      version: '0.0.0-bench',
      gracePeriodFloorSeconds: 10,
      resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
      observe: false,
    },
  });
  process.send?.({ url: webhook.url });
  process.on('message', async (message) => {
    if (message !== 'stop') return;
    const rssMiB = process.memoryUsage().rss / 1024 / 1024;
    // Private memory, without the binary's and libraries' file-backed pages (Linux only).
    const anon = /RssAnon:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    await webhook.close();
    process.send?.({ rssMiB, rssAnonMiB: anon === undefined ? Number.NaN : Number(anon) / 1024 }, () => process.exit(0));
  });
}

function post(agent: Agent, url: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/mutate`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function run(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '32' },
      seconds: { type: 'string', default: '30' },
      file: { type: 'string', default: DEFAULT_REVIEW.pathname },
    },
  });
  const total = Number(values.requests);
  const concurrency = Number(values.concurrency);
  const seconds = Number(values.seconds);
  if (!(total > 0 && concurrency > 0 && seconds > 0)) throw new Error('--requests, --concurrency and --seconds must be positive numbers');
  const body = readFileSync(values.file);

  const certsDir = await mkdtemp(join(tmpdir(), 'leaderhook-bench-'));
  const child = fork(new URL(import.meta.url).pathname, ['--serve', certsDir], { stdio: 'inherit' });
  try {
    const { url } = await new Promise<{ url: string }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { url: string }));
      child.once('exit', (code) => reject(new Error(`the server exited with code ${code} before serving`)));
    });
    const ca = await readFile(join(certsDir, 'ca.crt'));
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency, ca });

    const warmup = Math.min(2000, Math.ceil(total / 10));
    const latencies = new Float64Array(total);
    let sent = 0;
    let done = 0;
    let failures = 0;
    let notOk = 0;
    let deadline = Number.POSITIVE_INFINITY;

    const worker = async (count: () => boolean, record: boolean) => {
      while (count()) {
        const started = process.hrtime.bigint();
        try {
          const status = await post(agent, url, body);
          if (status !== 200) notOk += 1;
        } catch {
          failures += 1;
        }
        if (record) latencies[done++] = Number(process.hrtime.bigint() - started) / 1e6;
      }
    };

    let warmed = 0;
    await Promise.all(Array.from({ length: concurrency }, () => worker(() => warmed++ < warmup, false)));

    const started = performance.now();
    deadline = started + seconds * 1000;
    await Promise.all(Array.from({ length: concurrency }, () => worker(() => sent++ < total && performance.now() < deadline, true)));
    const elapsedS = (performance.now() - started) / 1000;

    const sorted = latencies.subarray(0, done).sort();
    const rss = await new Promise<{ rssMiB: number; rssAnonMiB: number }>((resolve) => {
      child.once('message', (m) => resolve(m as { rssMiB: number; rssAnonMiB: number }));
      child.send('stop');
    });
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
    agent.destroy();
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    console.log(
      [
        `review: ${values.file} (${body.length} bytes), concurrency ${concurrency}, warm-up ${warmup}`,
        `requests: ${done} in ${elapsedS.toFixed(2)} s (non-200: ${notOk}, failed: ${failures})`,
        `throughput: ${(done / elapsedS).toFixed(0)} req/s`,
        `latency: p50 ${ms(percentile(sorted, 50))}, p90 ${ms(percentile(sorted, 90))}, p99 ${ms(percentile(sorted, 99))}, max ${ms(sorted.at(-1) ?? Number.NaN)}`,
        `server memory at the end: RSS ${rss.rssMiB.toFixed(0)} MiB, private (RssAnon) ${rss.rssAnonMiB.toFixed(0)} MiB (running .ts: includes type stripping)`,
      ].join('\n'),
    );
  } finally {
    if (child.exitCode === null) child.kill();
    await rm(certsDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve' && process.argv[3]) {
  await serve(process.argv[3]);
} else {
  await run();
}
