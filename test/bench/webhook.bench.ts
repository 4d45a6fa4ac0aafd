/**
 * POST /mutate under load, leaderhook against its peer: the same mutation
 * written as an idiomatic controller-runtime webhook in Go
 * (test/peers/webhook), both over TLS on 127.0.0.1, in the same run.
 *
 *   npm run bench:webhook [-- --quick] [--seconds 6] [--warmup 8] [--pods kubebuilder,large]
 *     [--phases 100,500,2000,c1,c32] [--servers leaderhook,peer] [--root <checkout>] [--peer <binary>]
 *     [--memory-limit 256] [--node-flags="--cpu-prof --cpu-prof-dir=/tmp/prof"] [--heap-after-gc] [--memory-every 60] [--json results.jsonl]
 *
 * Each phase gets a fresh server process pinned to one core (`taskset -c 1`)
 * while this client runs on the other (core 0): leaderhook as the image runs
 * it (src/ compiled, `node dist/cli.js webhook`, NODE_ENV=production, its
 * JSON log lines to /dev/null), the peer as `go build` makes it (zap JSON
 * lines to /dev/null). Phases, for each pod (the kubebuilder pod of
 * test/testdata/admission and a generated 271 KB pod, see webhook-pods.ts):
 *   - 100, 500, 2000: open loop at that many requests/s over a pool of 32
 *     keep-alive connections, latency from when a request was due;
 *   - c1, c32: saturation, 1 or 32 connections sending back to back.
 * A warm-up of the same load comes first and is not counted: 8 s, because
 * V8 is still compiling the hot path on the server's one core for the first
 * ~10 s at 2,000 req/s, and with a 2 s warm-up those compile jobs were the
 * p99 at that rate (45-170 ms instead of 5-15 ms). The server's
 * VmRSS and RssAnon (/proc/PID/status) are sampled every 50 ms over warm-up
 * and run; the max is reported. The 1-minute load average is recorded at
 * the start of every phase: other work on the machine shows there.
 *
 * --memory-limit runs leaderhook in a memory cgroup with that limit, as a
 * container with `limits.memory` runs it (memory-cgroup.ts: the kernel
 * charges and OOM-kills, and Node hands the limit to V8, which sizes its heap
 * from it: 1 MiB semi-spaces and its smallest old generation, 256 MiB, for
 * any limit up to 1 GiB; with no limit this machine's 24 GiB give semi-spaces
 * of up to 64 MiB) and reports the cgroup's peak charge and OOM kills per
 * phase (root only); --node-flags adds any node flag
 * (with it, servers are stopped by SIGTERM, so a --cpu-prof is written).
 * --heap-after-gc runs leaderhook with `--trace-gc` (its log lines at warn, so
 * they do not flood the trace) and reports the heap each major collection
 * left, in order: a heap that keeps what requests allocated shows it there,
 * where the maximum RSS only shows that memory was used.
 * --memory-every S also keeps leaderhook's RssAnon every S seconds of a phase
 * (with the major collections so far) and prints the slope of the phase's
 * later half: for a phase of an hour or more, whether the server's memory
 * levels off or goes on rising.
 * --root measures another checkout's src/ (e.g. an older commit extracted
 * with `git archive`) with this checkout's node_modules. Loopback only; the
 * servers are stopped by their PIDs.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ensureDevCertificates } from '../../src/webhook/devcerts.ts';
import { buildPeer, type ServerProcess, startPeer, startServerProcess } from '../peers/webhook/process.ts';
import { compileLeaderhook, heapAfterMarkCompact } from '../support/compiled-leaderhook.ts';
import { goldenSettings } from '../support/injection-settings.ts';
import { memoryOf } from '../support/process-stats.ts';
import { createMemoryCgroup, type MemoryCgroup } from './memory-cgroup.ts';
import { judgedSlope, laterHalf } from './soak-analysis.ts';
import { closedLoop, type LoadResult, mutateRequest, openLoop, probe, type Target } from './webhook-client.ts';
import { kubebuilderReview, largePodReview } from './webhook-pods.ts';

const repo = resolve(new URL('../../', import.meta.url).pathname);

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    warmup: { type: 'string' },
    pods: { type: 'string', default: 'kubebuilder,large' },
    phases: { type: 'string', default: '100,500,2000,c1,c32' },
    servers: { type: 'string', default: 'leaderhook,peer' },
    root: { type: 'string', default: repo },
    peer: { type: 'string' },
    'node-flags': { type: 'string', default: '' },
    'heap-after-gc': { type: 'boolean', default: false },
    'memory-limit': { type: 'string' },
    'memory-every': { type: 'string' },
    json: { type: 'string' },
    'server-cpu': { type: 'string', default: '1' },
    'client-cpu': { type: 'string', default: '0' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${readFileSync(new URL(import.meta.url), 'utf8').split('*/')[0]}*/\n`);
  process.exit(0);
}

const seconds = Number(values.seconds ?? (values.quick ? 1.5 : 6));
const warmupSeconds = Number(values.warmup ?? (values.quick ? 0.5 : 8));
const pods = values.pods.split(',').map((p) => p.trim());
const phases = values.phases.split(',').map((p) => p.trim());
const servers = values.servers.split(',').map((s) => s.trim()) as ('leaderhook' | 'peer')[];
const heapAfterGc = values['heap-after-gc'];
const nodeFlags = [...values['node-flags'].split(/\s+/).filter(Boolean), ...(heapAfterGc ? ['--trace-gc'] : [])];
const memoryLimitMiB = values['memory-limit'] === undefined ? undefined : Number(values['memory-limit']);
if (memoryLimitMiB !== undefined && !(Number.isInteger(memoryLimitMiB) && memoryLimitMiB >= 32)) {
  throw new Error(`--memory-limit must be a whole number of MiB, at least 32; got ${values['memory-limit']}`);
}
const memoryEveryS = values['memory-every'] === undefined ? undefined : Number(values['memory-every']);
if (memoryEveryS !== undefined && !(Number.isInteger(memoryEveryS) && memoryEveryS >= 1)) {
  throw new Error(`--memory-every must be a whole number of seconds, at least 1; got ${values['memory-every']}`);
}
if (!(seconds > 0 && warmupSeconds >= 0)) throw new Error('--seconds must be positive and --warmup not negative');
for (const p of phases) if (!/^(\d+|c\d+)$/.test(p)) throw new Error(`--phases: "${p}" is neither a rate (500) nor a connection count (c32)`);
for (const p of pods) if (p !== 'kubebuilder' && p !== 'large') throw new Error(`--pods: "${p}" is not kubebuilder or large`);
for (const s of servers) if (s !== 'leaderhook' && s !== 'peer') throw new Error(`--servers: "${s}" is not leaderhook or peer`);

/** Connections of the open-loop pool, and the answers the drain waits for at the end of a phase. */
const OPEN_LOOP_CONNECTIONS = 32;
const RSS_SAMPLE_MS = 50;

/**
 * Nanoseconds the threads of `pid` have spent runnable but waiting for a CPU
 * (the second field of /proc/PID/task/TID/schedstat): time other processes
 * on the server's core took from it, and time its own threads took from each
 * other on that one core (Node's V8 GC and compiler workers and libuv pool;
 * Go's runtime threads).
 */
function runQueueWaitNs(pid: number): number {
  let wait = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      wait += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      // the thread ended
    }
  }
  return wait;
}

/** Steal time of `cpu` (/proc/stat, in USER_HZ ticks of 10 ms): time the hypervisor gave this virtual core to someone else. */
function stealTicks(cpu: string): number {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`cpu${cpu} `));
  return Number(line?.split(/\s+/)[8] ?? Number.NaN);
}

/** The server's RssAnon at one moment of a phase, with the major collections it had made by then (--memory-every). */
interface AnonSample {
  atS: number;
  anonKiB: number;
  majorGcs: number;
}

/**
 * Max VmRSS and RssAnon of `pid` while `work` runs; with `every`, also its
 * RssAnon every `every.seconds` (the first at the start).
 */
async function sampled<T>(
  pid: number,
  work: () => Promise<T>,
  every?: { seconds: number; majorGcs: () => number },
): Promise<{ result: T; rssMiB: number; anonMiB: number; anonSeries?: AnonSample[] }> {
  let rss = 0;
  let anon = 0;
  const started = performance.now();
  const series: AnonSample[] = [];
  const sample = () => {
    try {
      const s = memoryOf(pid);
      rss = Math.max(rss, s.rssKiB);
      anon = Math.max(anon, s.anonKiB);
      return s;
    } catch {
      // the process is gone; the load result says so
      return undefined;
    }
  };
  const keep = () => {
    const s = sample();
    if (s && every) series.push({ atS: (performance.now() - started) / 1000, anonKiB: s.anonKiB, majorGcs: every.majorGcs() });
  };
  keep();
  const timer = setInterval(sample, RSS_SAMPLE_MS);
  const seriesTimer = every ? setInterval(keep, every.seconds * 1000) : undefined;
  try {
    const result = await work();
    keep();
    return { result, rssMiB: rss / 1024, anonMiB: anon / 1024, ...(every ? { anonSeries: series } : {}) };
  } finally {
    clearInterval(timer);
    clearInterval(seriesTimer);
  }
}

/** " anon 22.1 → 30.4 MiB over 60 min, later half 0.8 MiB/h": where a long phase's memory went. */
function anonCourse(series: readonly AnonSample[]): string {
  const first = series[0];
  const last = series.at(-1);
  if (!first || !last) return '';
  const samples = series.map((s) => ({ atMs: s.atS * 1000, bytes: s.anonKiB * 1024 }));
  const slope = judgedSlope(laterHalf(samples));
  const later = slope ? `later half ${fmt(slope.bytesPerHour / 2 ** 20, 1)} MiB/h` : 'later half too short to judge';
  return `  anon ${fmt(first.anonKiB / 1024, 1)} → ${fmt(last.anonKiB / 1024, 1)} MiB over ${fmt(last.atS / 60, 0)} min, ${later}`;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Row {
  pod: string;
  /** Milliseconds per second the server was runnable but another process had its core (see runQueueWaitNs). */
  serverWaitMsPerS?: number;
  /** Milliseconds per second of steal time on the server's core (see stealTicks). */
  stealMsPerS?: number;
  phase: string;
  server: string;
  reqPerS: number;
  p50: number;
  p99: number;
  max: number;
  rssMiB: number;
  anonMiB: number;
  count: number;
  notOk: number;
  failed: number;
  /** The failures by the error each met. */
  failures: Record<string, number>;
  unsent: number;
  clientCpu: number;
  sendLagP99: number;
  load1: number;
  /** With --memory-limit: the leaderhook server's cgroup peak charge (MiB) and the processes OOM-killed in it. */
  cgroupPeakMiB?: number;
  oomKills?: number;
  /** With --memory-every: leaderhook's RssAnon every that many seconds of the phase. */
  anonSeries?: AnonSample[];
  /** With --heap-after-gc: the heap (MB) each major collection of the leaderhook server left, in order. */
  heapAfterMajorGcMB?: number[];
  /** Open loop: the rate was held (answers ≥ 98 % of requests due, none left unsent). */
  sustained: boolean;
}

/** " (connection closed by the server ×1)": what the failures of a phase met. */
const failureReasons = (failures: Record<string, number>): string =>
  Object.keys(failures).length === 0
    ? ''
    : ` (${Object.entries(failures)
        .map(([reason, times]) => `${reason} ×${times}`)
        .join('; ')})`;

function summarize(pod: string, phase: string, server: string, load: LoadResult, rssMiB: number, anonMiB: number, load1: number): Row {
  const sorted = load.latencies.subarray(0, load.count).sort();
  // An unsent request had waited unsentLatencyMs at the end: max is at least that.
  const max = Math.max(sorted.at(-1) ?? 0, load.unsentLatencyMs);
  const due = phase.startsWith('c') ? load.count : Math.round(Number(phase) * seconds);
  return {
    pod,
    phase,
    server,
    reqPerS: load.count / load.elapsedS,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max,
    rssMiB,
    anonMiB,
    count: load.count,
    notOk: load.notOk,
    failed: load.failed,
    failures: load.failures,
    unsent: load.unsent,
    clientCpu: load.clientCpu,
    sendLagP99: load.sendLagP99Ms,
    load1,
    sustained: phase.startsWith('c') || (load.unsent === 0 && load.count >= 0.98 * due),
  };
}

async function runPhase(target: Target, request: Buffer, phase: string, duration: number): Promise<LoadResult> {
  if (phase.startsWith('c')) return closedLoop(target, request, Number(phase.slice(1)), duration);
  return openLoop(target, request, Number(phase), duration, OPEN_LOOP_CONNECTIONS);
}

/** The server answers this review with 200, allowed and a patch: the phase measures real work. */
function checkAnswer(server: string, status: number, body: Buffer): void {
  const text = body.toString('utf8');
  if (status !== 200) throw new Error(`${server} answered ${status}: ${text.slice(0, 300)}`);
  const response = (JSON.parse(text) as { response?: { allowed?: boolean; patch?: string } }).response;
  if (response?.allowed !== true || !response.patch) throw new Error(`${server} did not answer with a patch: ${text.slice(0, 300)}`);
}

const fmt = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '-');

async function main(): Promise<void> {
  if (cpus().length < 2) throw new Error('needs 2 cores: one for the server, one for the client');
  // The client (this process, all its threads) on its own core.
  execFileSync('taskset', ['-a', '-p', '-c', values['client-cpu'], String(process.pid)], { stdio: 'ignore' });

  const scratch = mkdtempSync(join(tmpdir(), 'leaderhook-bench-webhook-'));
  const startLoad = loadavg();
  const rows: Row[] = [];
  try {
    await ensureDevCertificates(scratch, pino({ level: 'silent' }), ['127.0.0.1']);
    const certFile = join(scratch, 'tls.crt');
    const keyFile = join(scratch, 'tls.key');
    const ca = readFileSync(join(scratch, 'ca.crt'));
    const cli = servers.includes('leaderhook') ? compileLeaderhook(resolve(values.root), scratch) : '';
    const peerBinary = servers.includes('peer') ? (values.peer ?? (await buildPeer(scratch))) : '';
    const settings = goldenSettings;
    const version = (JSON.parse(readFileSync(join(resolve(values.root), 'package.json'), 'utf8')) as { version: string }).version;

    let cgroups = 0;
    const start = async (server: 'leaderhook' | 'peer'): Promise<ServerProcess & { cgroup?: MemoryCgroup; heapsAfter?: number[] }> => {
      const common = { certFile, keyFile, ca, settings: { ...settings, version }, cpus: values['server-cpu'] };
      if (server === 'peer') return startPeer(peerBinary, common);
      const cgroup = memoryLimitMiB === undefined ? undefined : createMemoryCgroup(`leaderhook-bench-${process.pid}-${cgroups++}`, memoryLimitMiB);
      const [command, ...prefix] = cgroup ? cgroup.wrap([process.execPath]) : [process.execPath];
      const running = await startServerProcess(
        command!,
        (port) => [
          ...prefix,
          ...nodeFlags,
          cli,
          'webhook',
          `--listen=127.0.0.1:${port}`,
          `--tls-cert-file=${certFile}`,
          `--tls-key-file=${keyFile}`,
          `--hook-image=${settings.image}`,
          `--hook-image-pull-policy=${settings.imagePullPolicy}`,
        ],
        {
          ...common,
          env: { PATH: process.env.PATH, NODE_ENV: 'production', LEADERHOOK_LOG_LEVEL: heapAfterGc ? 'warn' : 'info' },
          ...(heapAfterGc ? { stdio: 'pipe' as const } : {}),
        },
      ).catch((error) => {
        cgroup?.remove();
        throw error;
      });
      const heapsAfter: number[] = [];
      if (heapAfterGc && running.child.stdout) {
        running.child.stderr?.resume();
        createInterface({ input: running.child.stdout }).on('line', (line) => {
          const after = heapAfterMarkCompact(line);
          if (after !== undefined) heapsAfter.push(after);
        });
      }
      return { ...running, cgroup, heapsAfter };
    };

    const bodies: Record<string, Buffer> = { kubebuilder: kubebuilderReview(), large: largePodReview() };
    console.log(
      `# webhook benchmark: ${servers.join(' vs ')}, ${seconds} s per phase after ${warmupSeconds} s warm-up; nproc ${cpus().length}, ` +
        `load average ${startLoad.map((l) => l.toFixed(2)).join(' ')} at the start; server on core ${values['server-cpu']}, client on core ${values['client-cpu']}` +
        `${nodeFlags.length > 0 ? `; leaderhook's node flags: ${nodeFlags.join(' ')}` : ''}`,
    );
    for (const pod of pods) {
      const body = bodies[pod]!;
      const request = mutateRequest(body);
      for (const phase of phases) {
        for (const server of servers) {
          const load1 = loadavg()[0]!;
          const running = await start(server);
          try {
            const target = { port: Number(new URL(running.url).port), ca };
            const answer = await probe(target, request);
            checkAnswer(server, answer.status, answer.body);
            let waitNs = 0;
            let steal = 0;
            const every =
              memoryEveryS !== undefined && server === 'leaderhook' ? { seconds: memoryEveryS, majorGcs: () => running.heapsAfter?.length ?? 0 } : undefined;
            const { result, rssMiB, anonMiB, anonSeries } = await sampled(
              running.pid,
              async () => {
                if (warmupSeconds > 0) await runPhase(target, request, phase, warmupSeconds);
                const waitBefore = runQueueWaitNs(running.pid);
                const stealBefore = stealTicks(values['server-cpu']);
                const load = await runPhase(target, request, phase, seconds);
                waitNs = runQueueWaitNs(running.pid) - waitBefore;
                steal = stealTicks(values['server-cpu']) - stealBefore;
                return load;
              },
              every,
            );
            const row = {
              ...summarize(pod, phase, server, result, rssMiB, anonMiB, load1),
              serverWaitMsPerS: waitNs / 1e6 / result.elapsedS,
              stealMsPerS: (steal * 10) / result.elapsedS,
              ...(running.cgroup ? { cgroupPeakMiB: running.cgroup.peakMiB(), oomKills: running.cgroup.oomKills() } : {}),
              ...(heapAfterGc && server === 'leaderhook' ? { heapAfterMajorGcMB: [...(running.heapsAfter ?? [])] } : {}),
              ...(anonSeries ? { anonSeries } : {}),
            };
            rows.push(row);
            console.log(
              `${pod} ${phase.padStart(4)} ${server.padEnd(10)} ${fmt(row.reqPerS, 0).padStart(6)} req/s  p50 ${fmt(row.p50)}  p99 ${fmt(row.p99)}  max ${fmt(row.max)} ms  ` +
                `RSS ${fmt(row.rssMiB, 0)} MiB (anon ${fmt(row.anonMiB, 0)})  client CPU ${fmt(row.clientCpu * 100, 0)} %, send lag p99 ${fmt(row.sendLagP99)} ms  ` +
                `server waited ${fmt(row.serverWaitMsPerS, 0)} ms/s for its core, steal ${fmt(row.stealMsPerS, 0)} ms/s  load ${fmt(load1)}` +
                `${row.cgroupPeakMiB === undefined ? '' : `  cgroup peak ${fmt(row.cgroupPeakMiB, 0)} of ${memoryLimitMiB} MiB, OOM kills ${row.oomKills}`}` +
                `${row.heapAfterMajorGcMB ? `  heap after each major collection ${row.heapAfterMajorGcMB.join(', ') || 'none'} MB` : ''}` +
                `${row.anonSeries ? anonCourse(row.anonSeries) : ''}` +
                `${row.notOk || row.failed || row.unsent ? `  non-200 ${row.notOk}, failed ${row.failed}${failureReasons(row.failures)}, unsent ${row.unsent}` : ''}${row.sustained ? '' : '  NOT SUSTAINED'}`,
            );
            if (values.json)
              await appendFile(values.json, `${JSON.stringify({ ...row, seconds, warmupSeconds, bodyBytes: body.length, root: values.root })}\n`);
          } finally {
            if (values['node-flags'] !== '') await running.stop();
            else {
              // Nothing of a graceful shutdown is measured; leaderhook's takes 2 s of readiness delay.
              running.child.kill('SIGKILL');
              await running.stop();
            }
            running.cgroup?.remove();
          }
        }
      }
    }
    printTables(rows, bodies);
    console.log(
      `\nload average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function printTables(rows: Row[], bodies: Record<string, Buffer>): void {
  const cgroupColumns = memoryLimitMiB !== undefined;
  const label = (phase: string) => (phase.startsWith('c') ? `saturation, ${phase.slice(1)} conn.` : `${phase} req/s`);
  for (const pod of pods) {
    console.log(`\n## ${pod} pod (${bodies[pod]!.length} bytes)\n`);
    console.log(
      `| load | server | req/s | p50 ms | p99 ms | max ms | VmRSS max MiB | RssAnon max MiB | client CPU | client send lag p99 ms | server waited for its core ms/s | steal ms/s | load avg |${cgroupColumns ? ` cgroup peak MiB (limit ${memoryLimitMiB}) | OOM kills |` : ''}`,
    );
    console.log(`| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |${cgroupColumns ? ' ---: | ---: |' : ''}`);
    for (const r of rows.filter((x) => x.pod === pod)) {
      const note = r.sustained ? '' : ' (not sustained)';
      console.log(
        `| ${label(r.phase)} | ${r.server} | ${fmt(r.reqPerS, 0)}${note} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.max)} | ${fmt(r.rssMiB, 0)} | ${fmt(r.anonMiB, 0)} | ${fmt(r.clientCpu * 100, 0)} % | ${r.phase.startsWith('c') ? '-' : fmt(r.sendLagP99)} | ${fmt(r.serverWaitMsPerS ?? Number.NaN, 0)} | ${fmt(r.stealMsPerS ?? Number.NaN, 0)} | ${fmt(r.load1)} |${cgroupColumns ? ` ${fmt(r.cgroupPeakMiB ?? Number.NaN, 0)} | ${r.oomKills ?? '-'} |` : ''}`,
      );
    }
  }
  if (!(servers.includes('leaderhook') && servers.includes('peer'))) return;
  console.log('\n## leaderhook / peer\n');
  console.log('| pod | load | req/s | p99 | VmRSS max |');
  console.log('| --- | --- | ---: | ---: | ---: |');
  for (const pod of pods) {
    for (const phase of phases) {
      const ours = rows.find((r) => r.pod === pod && r.phase === phase && r.server === 'leaderhook');
      const theirs = rows.find((r) => r.pod === pod && r.phase === phase && r.server === 'peer');
      if (!ours || !theirs) continue;
      console.log(
        `| ${pod} | ${label(phase)} | ${fmt(ours.reqPerS / theirs.reqPerS)}× | ${fmt(ours.p99 / theirs.p99)}× | ${fmt(ours.rssMiB / theirs.rssMiB)}× |`,
      );
    }
  }
}

await main();
