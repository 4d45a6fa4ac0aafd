/**
 * `npm run bench:scale`: what the release hooks of many operator pods cost
 * the API server, against their number.
 *
 *   npm run bench:scale -- [--hooks 100,300] [--replicas 2,20,100] [--window 60] [--cli dist/cli.js] [--json FILE]
 *
 * For each namespace size R (operator replicas per namespace) and each hook
 * count N: N/R namespaces, each with R operator pods (pod objects bound to
 * a node that runs nothing, as the releaser tests make them), the hook's
 * Role, and a Lease held by the first pod as controller-runtime holds it
 * (`<pod>_<uuid>`, renewed every 2 s by this benchmark as the leader's
 * elector would, with the version it last read). Then, on the same objects:
 *   1. without hooks: the API server over `--window` seconds (the operators'
 *      own load: the leaders' renewals);
 *   2. N hooks start (the compiled `leaderhook release`, one process per
 *      pod, authenticated as the pod's service account, 8 starting at a
 *      time): what their start cost (requests, list bytes, CPU), as a
 *      rollout restarting every hook at once makes the API server pay;
 *   3. with hooks: the API server over the same window, and each hook's own
 *      CPU and memory, and the watch events each received.
 * Figures come from the API server's /metrics (requests and response bytes
 * by verb and resource, watch events and their bytes, open watches, process
 * CPU and RSS) and /proc of the hook processes. N=0 is the cluster alone.
 *
 * The hooks are processes of this machine rather than containers: what the
 * API server sees of a hook (its lists, watches and reads) is the same, and
 * N hooks fit where N operator pods with their containers would not.
 * The kubelet's side of a rollout is bench:failover's and pod-start's.
 *
 * Refuses to run outside the cluster's network namespace. --json FILE writes
 * every figure (test/bench/scale-report.ts renders docs/scale.md from it).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import {
  admin,
  createFakeNode,
  createLease,
  createNamespace,
  createPod,
  deleteNode,
  sleep,
  type TestNamespace,
  waitFor,
} from '../integration/releaser/harness.ts';
import { type HookProcess, startHookProcess } from '../integration/releaser/hook-process.ts';
import { compileLeaderhook } from '../support/compiled-leaderhook.ts';
import { connectTestCluster, refuseLeftovers } from '../support/kube.ts';
import { cpuSecondsOf, memoryOf } from '../support/process-stats.ts';
import { readBody, sendApiRequest } from '../support/raw-api.ts';
import { type ApiServerSample, costBetween, ratesBetween, sampleOf } from './apiserver-metrics.ts';
import { optionsOrExit, wholeNumberList } from './bench-args.ts';
import { type RenewedLease, renewedLease, renewLeases } from './lease-renewer.ts';
import type { ScaleRecord, ScaleRun } from './scale-report.ts';
import { median, percentile } from './stats.ts';

const usage = `usage: npm run bench:scale -- [--hooks 100,300] [--replicas 2,20,100] [--window 60] [--cli dist/cli.js] [--json FILE]

  --hooks LIST     hook counts to measure (N=0, the cluster alone, is always measured first)
  --replicas LIST  operator replicas per namespace; N/R namespaces of R pods each
  --window S       seconds each steady state is measured over (default 60)
  --cli FILE       the hook to run: another build's dist/cli.js (default: src/ compiled now)
  --json FILE      write every figure there, rewritten after each run (a new file; for test/bench/scale-report.ts)
`;

/** The options, checked before the cluster is touched: --help and a bad option answer on any machine. */
function parseScaleArgs() {
  const { values } = parseArgs({
    options: {
      hooks: { type: 'string', default: '100,300' },
      replicas: { type: 'string', default: '2,20,100' },
      window: { type: 'string', default: '60' },
      json: { type: 'string' },
      cli: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const wholeNumbers = (flag: string, list: string) => wholeNumberList(flag, list, 1, usage);
  const hookCounts = wholeNumbers('hooks', values.hooks);
  const replicaCounts = wholeNumbers('replicas', values.replicas);
  const [windowSeconds] = wholeNumbers('window', values.window) as [number];
  if (values.json && existsSync(values.json)) throw new Error(`--json ${values.json} exists: a record is never overwritten; give a new file`);
  for (const n of hookCounts)
    for (const r of replicaCounts) if (n % r) throw new Error(`--hooks ${n} is not a multiple of --replicas ${r}: every namespace holds R pods`);
  return { values, hookCounts, replicaCounts, windowSeconds };
}

const { values, hookCounts, replicaCounts, windowSeconds } = optionsOrExit('bench:scale', usage, parseScaleArgs);
connectTestCluster();
await refuseLeftovers('bench:scale');

const HOOKS_STARTING_AT_ONCE = 8;

async function apiServer(): Promise<ApiServerSample> {
  const text = await readBody(await sendApiRequest('GET', '/metrics'));
  return sampleOf(text, performance.now() / 1000);
}

const progress = (line: string) => process.stderr.write(`[scale] ${line}\n`);

/** One namespace of R operator pods whose first leads. */
interface OperatorNamespace {
  ns: TestNamespace;
  pods: { name: string; uid: string }[];
  lease: RenewedLease;
}

async function createOperators(node: string, namespaces: number, replicas: number): Promise<OperatorNamespace[]> {
  const out: OperatorNamespace[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < namespaces; i = next++) {
      const ns = await createNamespace('scale');
      const pods = [];
      for (let p = 0; p < replicas; p++) {
        const pod = await createPod(ns.name, `operator-${p}`, node);
        pods.push({ name: pod.metadata?.name as string, uid: pod.metadata?.uid as string });
      }
      const lease = renewedLease(await createLease(ns.name, 'operator-lock', `${pods[0]?.name}_${randomUUID()}`));
      out.push({ ns, pods, lease });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}

async function startHooks(cli: string, operators: OperatorNamespace[]): Promise<{ hooks: HookProcess[]; readyMs: number[] }> {
  const todo = operators.flatMap((o) => o.pods.map((pod) => ({ o, pod })));
  const hooks: HookProcess[] = [];
  const readyMs: number[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < todo.length; i = next++) {
      const { o, pod } = todo[i] as (typeof todo)[number];
      const hook = startHookProcess(cli, o.ns, { metadata: { name: pod.name, uid: pod.uid } });
      hooks.push(hook);
      readyMs.push(await hook.readyAfterMs);
    }
  };
  await Promise.all(Array.from({ length: HOOKS_STARTING_AT_ONCE }, worker));
  return { hooks, readyMs };
}

async function stopHooks(hooks: HookProcess[]): Promise<void> {
  for (const h of hooks) h.process.kill('SIGKILL');
  await Promise.all(hooks.map((h) => h.exited));
}

async function measure(replicas: number, hooks: number, cli: string, node: string): Promise<ScaleRun> {
  progress(`N=${hooks} in namespaces of ${replicas}: creating ${hooks / replicas} namespaces`);
  const operators = await createOperators(node, hooks / replicas, replicas);
  const renewing = new AbortController();
  const renewer = renewLeases(
    operators.map((o) => o.lease),
    renewing.signal,
    progress,
  );
  let started: HookProcess[] = [];
  try {
    await sleep(5_000);
    progress(`N=${hooks} R=${replicas}: ${windowSeconds} s without hooks`);
    const w0 = await apiServer();
    await sleep(windowSeconds * 1000);
    const without = ratesBetween(w0, await apiServer());

    progress(`N=${hooks} R=${replicas}: starting ${hooks} hooks`);
    const s0 = await apiServer();
    const { hooks: running, readyMs } = await startHooks(cli, operators);
    started = running;
    const startCost = costBetween(s0, await apiServer());

    await sleep(5_000);
    progress(`N=${hooks} R=${replicas}: ${windowSeconds} s with hooks`);
    const pids = running.map((h) => h.process.pid as number);
    const cpu0 = pids.map(cpuSecondsOf);
    const h0 = await apiServer();
    await sleep(windowSeconds * 1000);
    const h1 = await apiServer();
    const cpuMs = pids.map((pid, i) => ((cpuSecondsOf(pid) - (cpu0[i] as number)) * 1000) / windowSeconds);
    const memories = pids.map(memoryOf);
    const exited = running.filter((h) => h.process.exitCode !== null).length;
    return {
      replicas,
      hooks,
      namespaces: operators.length,
      without,
      with: ratesBetween(h0, h1),
      start: { ...startCost, readyMsP50: median(readyMs), readyMsP90: percentile(readyMs, 90) },
      hook: {
        cpuMsPerSecondP50: median(cpuMs),
        cpuMsPerSecondP90: percentile(cpuMs, 90),
        cpuMsPerSecondTotal: cpuMs.reduce((a, b) => a + b, 0),
        rssKiBP50: median(memories.map((m) => m.rssKiB)),
        rssAnonKiBP50: median(memories.map((m) => m.anonKiB)),
        rssAnonKiBMax: Math.max(...memories.map((m) => m.anonKiB)),
        exited,
      },
    };
  } finally {
    renewing.abort();
    await renewer;
    await stopHooks(started);
    progress(`N=${hooks} R=${replicas}: cleaning up`);
    for (let i = 0; i < operators.length; i += 16) await Promise.all(operators.slice(i, i + 16).map((o) => o.ns.cleanup()));
    // the namespace controller's deletions would count in the next run's window
    const names = new Set(operators.map((o) => o.ns.name));
    await waitFor(
      'the namespaces deleted',
      async () => {
        const list = await (await admin()).request<{ items: { metadata: { name: string } }[] }>({ method: 'GET', path: '/api/v1/namespaces' });
        return !list.items.some((n) => names.has(n.metadata.name));
      },
      600_000,
      2_000,
    );
  }
}

async function main(): Promise<void> {
  const cli = values.cli ?? compileLeaderhook();
  // counted before the benchmark's own node, which runs nothing
  const clusterNodes = (await (await admin()).request<{ items: unknown[] }>({ method: 'GET', path: '/api/v1/nodes' })).items.length;
  const node = await createFakeNode();
  const record: ScaleRecord = {
    command: `npm run bench:scale -- ${process.argv.slice(2).join(' ')}`.trim(),
    date: new Date().toISOString(),
    machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    windowSeconds,
    nodes: clusterNodes,
    kubernetes: (await admin().then((k) => k.request<{ gitVersion: string }>({ method: 'GET', path: '/version' }))).gitVersion,
    idle: ratesBetween(await apiServer(), await sleep(windowSeconds * 1000).then(apiServer)),
    runs: [],
  };
  progress(`N=0: the cluster alone over ${windowSeconds} s: API server ${(record.idle.cpuCores * 1000).toFixed(0)} mCPU`);
  try {
    for (const replicas of replicaCounts) {
      for (const hooks of hookCounts) {
        const run = await measure(replicas, hooks, cli, node);
        record.runs.push(run);
        progress(
          `N=${hooks} R=${replicas}: API server ${(run.without.cpuCores * 1000).toFixed(0)} → ${(run.with.cpuCores * 1000).toFixed(0)} mCPU, ` +
            `RSS ${(run.without.residentBytes / 2 ** 20).toFixed(0)} → ${(run.with.residentBytes / 2 ** 20).toFixed(0)} MiB, watches ${run.without.watches} → ${run.with.watches}; ` +
            `hook p50 ${run.hook.cpuMsPerSecondP50.toFixed(2)} ms CPU/s, RssAnon ${(run.hook.rssAnonKiBP50 / 1024).toFixed(1)} MiB`,
        );
        if (values.json) writeFileSync(values.json, `${JSON.stringify(record, null, 2)}\n`);
      }
    }
  } finally {
    await deleteNode(node);
  }
  const { renderScaleTables } = await import('./scale-report.ts');
  process.stdout.write(`${renderScaleTables(record)}\n`);
}

await main();
