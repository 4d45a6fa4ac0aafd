/**
 * Bad input at scale: generated bodies of every class of
 * test/support/review-arbitraries.ts against leaderhook's webhook as the
 * image runs it (src/ compiled, `node dist/cli.js webhook`,
 * NODE_ENV=production, its log lines to /dev/null), as a process of its own,
 * over keep-alive HTTPS on 127.0.0.1.
 *
 *   npm run bench:webhook-fuzz [-- --bodies 100000] [--seed N] [--concurrency 16] [--settle 10]
 *     [--body-limit <bytes>] [--batch 500] [--rss-growth-mib 32] [--memory-limit 256] [--node-flags="..."]
 *     [--server-env NAME=VALUE ...] [--replay <batch>:<index>]
 *
 * Bodies are generated in batches of --batch, batch b from seed + b, and each
 * batch is sent over --concurrency connections before the next is made. Every
 * answer is judged by test/support/review-answers.ts. Printed: the answers by
 * class and status; 5xx; failed connections; whether the server exited (a
 * crash); the admissions the server itself counted as internal errors
 * (leaderhook_admissions_total{outcome="error"}); the server's VmRSS and
 * RssAnon (/proc/PID/status) at start, at their peak (sampled every 100 ms)
 * and after --settle seconds idle with the client's connections closed.
 *
 * Exits 1 when an invariant broke: a body answered otherwise than its class
 * requires, a 5xx, a failed connection, a crash, an internal error, or an
 * RssAnon after the settle more than --rss-growth-mib above the start. Each
 * broken body is printed with its batch and index; `--seed S --replay B:I`
 * generates and sends that one body again. The body limit is the webhook's
 * default unless --body-limit says otherwise; the generator makes huge bodies
 * up to it and oversized ones above it. --memory-limit runs the server in a
 * memory cgroup with that limit, as a container runs it (memory-cgroup.ts:
 * V8 sizes its heap from it, the kernel OOM-kills past it; root only), and
 * prints the cgroup's peak and OOM kills; --node-flags any other node flag, --server-env a
 * variable of the server's environment (glibc's MALLOC_ARENA_MAX, say). This
 * counts answers and memory: the
 * elapsed time is printed to plan a run, nothing here is a timing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { pino } from 'pino';
import { webhookFlags } from '../../src/commands/flags.ts';
import { ensureDevCertificates } from '../../src/webhook/devcerts.ts';
import { type ServerProcess, startServerProcess } from '../peers/webhook/process.ts';
import { compileLeaderhook } from '../support/compiled-leaderhook.ts';
import { type FuzzTarget, keepAliveAgent, sendFuzzBody } from '../support/fuzz-client.ts';
import { goldenSettings } from '../support/injection-settings.ts';
import { memoryOf } from '../support/process-stats.ts';
import { checkAnswer } from '../support/review-answers.ts';
import { anyBody, BODY_CLASSES, type BodyClass, type FuzzBody } from '../support/review-arbitraries.ts';
import { createMemoryCgroup, type MemoryCgroup } from './memory-cgroup.ts';

const repo = resolve(new URL('../../', import.meta.url).pathname);
const DEFAULT_BODY_LIMIT = webhookFlags.find((f) => f.name === 'body-limit')?.default;

const { values } = parseArgs({
  options: {
    bodies: { type: 'string', default: '100000' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '16' },
    settle: { type: 'string', default: '10' },
    'body-limit': { type: 'string', default: DEFAULT_BODY_LIMIT },
    batch: { type: 'string', default: '500' },
    'rss-growth-mib': { type: 'string', default: '32' },
    'memory-limit': { type: 'string' },
    'node-flags': { type: 'string', default: '' },
    'server-env': { type: 'string', multiple: true, default: [] },
    replay: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${readFileSync(new URL(import.meta.url), 'utf8').split('*/')[0]}*/\n`);
  process.exit(0);
}

const bodies = Number(values.bodies);
const seed = values.seed === undefined ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0 : Number(values.seed);
const concurrency = Number(values.concurrency);
const settleSeconds = Number(values.settle);
const bodyLimitBytes = Number(values['body-limit']);
const batchSize = Number(values.batch);
const rssGrowthMiB = Number(values['rss-growth-mib']);
for (const [flag, value] of Object.entries({ bodies, seed, concurrency, settle: settleSeconds, 'body-limit': bodyLimitBytes, batch: batchSize })) {
  if (!Number.isInteger(value) || (flag !== 'seed' && flag !== 'settle' && value <= 0) || value < -(2 ** 31))
    throw new Error(`--${flag}: ${value} is not a fitting whole number`);
}

const RSS_SAMPLE_MS = 100;

/** --server-env NAME=VALUE, as an environment. */
function serverEnv(): Record<string, string> {
  return Object.fromEntries(
    values['server-env'].map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`--server-env: "${pair}" is not NAME=VALUE`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}
/** Broken bodies printed in full; the rest are counted. */
const SHOWN_VIOLATIONS = 20;

/** Batch `batch` of the run of `seed`: the same bodies every time. */
function generateBatch(batch: number, count: number): FuzzBody[] {
  return fc.sample(anyBody({ bodyLimitBytes }), { seed: (seed + batch) | 0, numRuns: count });
}

interface Memory {
  rssMiB: number;
  anonMiB: number;
}

function memoryMiBOf(pid: number): Memory {
  const { rssKiB, anonKiB } = memoryOf(pid);
  return { rssMiB: rssKiB / 1024, anonMiB: anonKiB / 1024 };
}

/** The sum of a counter's series whose labels match `labels`, from the server's /metrics. */
function counterSum(metrics: string, name: string, labels: RegExp): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (match?.[1] === name && labels.test(match[2]!)) sum += Number(match[3]);
  }
  return sum;
}

/** A metric without labels (a gauge of prom-client's default metrics), in MiB. */
function gaugeMiB(metrics: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics);
  return match ? Number(match[1]) / 2 ** 20 : Number.NaN;
}

/** What the server's V8 holds, as it reports it: heap used (uncollected garbage included) and external memory (Buffers). */
function v8MemoryOf(metrics: string): { heapMiB: number; externalMiB: number } {
  return { heapMiB: gaugeMiB(metrics, 'nodejs_heap_size_used_bytes'), externalMiB: gaugeMiB(metrics, 'nodejs_external_memory_bytes') };
}

async function fetchMetrics(target: FuzzTarget): Promise<string> {
  const { request } = await import('node:https');
  return new Promise((done, fail) => {
    request(`${target.url}/metrics`, { ca: target.ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
      res.on('error', fail);
    })
      .on('error', fail)
      .end();
  });
}

const fmt = (v: number) => v.toFixed(1);

interface Violation {
  batch: number;
  index: number;
  body: FuzzBody;
  problem: string;
}

const memoryLimitMiB = values['memory-limit'] === undefined ? undefined : Number(values['memory-limit']);
if (memoryLimitMiB !== undefined && !(Number.isInteger(memoryLimitMiB) && memoryLimitMiB >= 32)) {
  throw new Error(`--memory-limit must be a whole number of MiB, at least 32; got ${values['memory-limit']}`);
}
let cgroup: MemoryCgroup | undefined;

async function startServer(scratch: string): Promise<{ server: ServerProcess; ca: Buffer }> {
  await ensureDevCertificates(scratch, pino({ level: 'silent' }), ['127.0.0.1']);
  const certFile = join(scratch, 'tls.crt');
  const keyFile = join(scratch, 'tls.key');
  const ca = readFileSync(join(scratch, 'ca.crt'));
  const cli = compileLeaderhook(repo, scratch);
  cgroup = memoryLimitMiB === undefined ? undefined : createMemoryCgroup(`leaderhook-fuzz-${process.pid}`, memoryLimitMiB);
  const [command, ...prefix] = cgroup ? cgroup.wrap([process.execPath]) : [process.execPath];
  const server = await startServerProcess(
    command!,
    (port) => [
      ...prefix,
      ...values['node-flags'].split(/\s+/).filter(Boolean),
      cli,
      'webhook',
      `--listen=127.0.0.1:${port}`,
      `--tls-cert-file=${certFile}`,
      `--tls-key-file=${keyFile}`,
      `--hook-image=${goldenSettings.image}`,
      `--hook-image-pull-policy=${goldenSettings.imagePullPolicy}`,
      `--body-limit=${bodyLimitBytes}`,
    ],
    { certFile, keyFile, ca, settings: goldenSettings, env: { PATH: process.env.PATH, NODE_ENV: 'production', LEADERHOOK_LOG_LEVEL: 'info', ...serverEnv() } },
  );
  return { server, ca };
}

async function replay(target: FuzzTarget, which: string): Promise<boolean> {
  const [batch, index] = which.split(':').map(Number) as [number, number];
  const body = generateBatch(batch, index + 1)[index]!;
  console.log(`# seed ${seed}, batch ${batch}, body ${index}: ${fc.stringify(body)}`);
  const answer = await sendFuzzBody(target, body);
  const problem = checkAnswer(body, answer.status, answer.text);
  console.log(`answer ${answer.status}: ${answer.text.slice(0, 2000)}`);
  console.log(problem === undefined ? 'answered as its class requires' : `BROKEN: ${problem}`);
  return problem === undefined;
}

async function main(): Promise<number> {
  const scratch = mkdtempSync(join(tmpdir(), 'leaderhook-bench-fuzz-'));
  let server: ServerProcess | undefined;
  try {
    const started = await startServer(scratch);
    server = started.server;
    const pid = server.pid;
    let exited: string | undefined;
    server.child.once('exit', (code, signal) => {
      exited = `exit code ${code}, signal ${signal}`;
    });
    const target: FuzzTarget = { url: server.url, ca: started.ca, agent: keepAliveAgent(concurrency) };
    if (values.replay !== undefined) return (await replay(target, values.replay)) ? 0 : 1;

    console.log(
      `# webhook fuzz: ${bodies} bodies, seed ${seed} (one again: --seed ${seed} --replay <batch>:<index>), ${concurrency} keep-alive connections, ` +
        `body limit ${bodyLimitBytes} bytes, server pid ${pid}${memoryLimitMiB === undefined ? '' : `, in a memory cgroup of ${memoryLimitMiB} MiB`}`,
    );
    await new Promise((done) => setTimeout(done, 1000));
    const atStart = memoryMiBOf(pid);
    const v8AtStart = v8MemoryOf(await fetchMetrics(target));
    const peak = { ...atStart };
    const sampler = setInterval(() => {
      if (exited !== undefined) return;
      const now = memoryMiBOf(pid);
      peak.rssMiB = Math.max(peak.rssMiB, now.rssMiB);
      peak.anonMiB = Math.max(peak.anonMiB, now.anonMiB);
    }, RSS_SAMPLE_MS);

    const counts = new Map<BodyClass, Map<string, number>>();
    const violations: Violation[] = [];
    let violationCount = 0;
    let serverErrors = 0;
    let connectionFailures = 0;
    let bytesSent = 0;
    const began = performance.now();
    for (let batch = 0; batch * batchSize < bodies && exited === undefined; batch++) {
      const batchBodies = generateBatch(batch, Math.min(batchSize, bodies - batch * batchSize));
      let next = 0;
      const work = async () => {
        while (next < batchBodies.length && exited === undefined) {
          const index = next++;
          const body = batchBodies[index]!;
          bytesSent += body.body.length;
          let status = 'failed';
          let problem: string | undefined;
          try {
            const answer = await sendFuzzBody(target, body);
            status = String(answer.status);
            if (answer.status >= 500) serverErrors += 1;
            problem = checkAnswer(body, answer.status, answer.text);
          } catch (error) {
            connectionFailures += 1;
            problem = `connection failed: ${(error as Error).message}`;
          }
          const byStatus = counts.get(body.class) ?? new Map<string, number>();
          byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
          counts.set(body.class, byStatus);
          if (problem !== undefined) {
            violationCount += 1;
            if (violations.length < SHOWN_VIOLATIONS) violations.push({ batch, index, body, problem });
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, work));
      const done = Math.min(bodies, (batch + 1) * batchSize);
      if (done % 10_000 === 0 || done === bodies) {
        const now = memoryMiBOf(pid);
        console.log(
          `  ${done} bodies, ${((performance.now() - began) / 1000).toFixed(0)} s, ${violationCount} broken; server VmRSS ${fmt(now.rssMiB)} MiB, RssAnon ${fmt(now.anonMiB)} MiB`,
        );
      }
    }
    const elapsedS = (performance.now() - began) / 1000;
    const internalErrors = exited === undefined ? counterSum(await fetchMetrics(target), 'leaderhook_admissions_total', /outcome="error"/) : Number.NaN;
    target.agent.destroy();
    clearInterval(sampler);
    // RssAnon each second of the settle: how soon V8 and the allocator give memory back.
    const settling: number[] = [];
    for (let second = 0; second < settleSeconds && exited === undefined; second++) {
      await new Promise((done) => setTimeout(done, 1000));
      settling.push(memoryMiBOf(pid).anonMiB);
    }
    const settled = exited === undefined ? memoryMiBOf(pid) : { rssMiB: Number.NaN, anonMiB: Number.NaN };
    const v8Settled = exited === undefined ? v8MemoryOf(await fetchMetrics(target)) : { heapMiB: Number.NaN, externalMiB: Number.NaN };

    printCounts(counts);
    for (const v of violations)
      console.log(`\nBROKEN batch ${v.batch} body ${v.index} (--seed ${seed} --replay ${v.batch}:${v.index}): ${v.problem}\n  ${fc.stringify(v.body)}`);
    const growth = settled.anonMiB - atStart.anonMiB;
    console.log(`\nbodies sent: ${bodies} (${(bytesSent / 2 ** 20).toFixed(0)} MiB) in ${elapsedS.toFixed(0)} s, seed ${seed}`);
    console.log(`answered otherwise than their class requires: ${violationCount}`);
    console.log(
      `5xx: ${serverErrors}; failed connections: ${connectionFailures}; server exited: ${exited ?? 'no'}; internal errors counted by the server: ${internalErrors}`,
    );
    console.log('server memory (MiB)      VmRSS   RssAnon   V8 heap used   V8 external');
    const v8 = (m: { heapMiB: number; externalMiB: number }) => `${fmt(m.heapMiB).padStart(14)} ${fmt(m.externalMiB).padStart(13)}`;
    console.log(`  at start (1 s idle)  ${fmt(atStart.rssMiB).padStart(7)} ${fmt(atStart.anonMiB).padStart(9)} ${v8(v8AtStart)}`);
    console.log(`  peak                 ${fmt(peak.rssMiB).padStart(7)} ${fmt(peak.anonMiB).padStart(9)}`);
    if (cgroup) console.log(`  cgroup peak charge ${fmt(cgroup.peakMiB())} of ${memoryLimitMiB} MiB, OOM kills ${cgroup.oomKills()}`);
    console.log(
      `  after ${settleSeconds} s idle      ${fmt(settled.rssMiB).padStart(7)} ${fmt(settled.anonMiB).padStart(9)} ${v8(v8Settled)}  (RssAnon ${growth >= 0 ? '+' : ''}${fmt(growth)} over the start)`,
    );
    console.log(`  RssAnon each second of the settle: ${settling.map((m) => m.toFixed(0)).join(' ')}`);

    const broken: string[] = [];
    if (violationCount > 0) broken.push(`${violationCount} bodies answered otherwise than their class requires`);
    if (serverErrors > 0) broken.push(`${serverErrors} answers were 5xx`);
    if (connectionFailures > 0) broken.push(`${connectionFailures} connections failed`);
    if (exited !== undefined) broken.push(`the server exited (${exited})`);
    if (internalErrors > 0) broken.push(`the server counted ${internalErrors} internal errors`);
    if (!(growth <= rssGrowthMiB)) broken.push(`RssAnon after ${settleSeconds} s idle is ${fmt(growth)} MiB above the start (allowed: ${rssGrowthMiB})`);
    console.log(broken.length === 0 ? '\nall invariants held' : `\nINVARIANTS BROKEN: ${broken.join('; ')}`);
    return broken.length === 0 ? 0 : 1;
  } finally {
    await server?.stop();
    cgroup?.remove();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function printCounts(counts: Map<BodyClass, Map<string, number>>): void {
  const statuses = [...new Set([...counts.values()].flatMap((byStatus) => [...byStatus.keys()]))].sort();
  console.log(`\n| class | expected | ${statuses.join(' | ')} |`);
  console.log(`| --- | ---: | ${statuses.map(() => '---:').join(' | ')} |`);
  for (const cls of Object.keys(BODY_CLASSES) as BodyClass[]) {
    const byStatus = counts.get(cls) ?? new Map<string, number>();
    console.log(`| ${cls} | ${BODY_CLASSES[cls]} | ${statuses.map((s) => byStatus.get(s) ?? 0).join(' | ')} |`);
  }
}

process.exitCode = await main();
