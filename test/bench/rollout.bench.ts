/**
 * What the release hook costs a whole Deployment on the real kubelet: the
 * lease-operator with many replicas, created and then restarted
 * (`kubectl rollout restart`), once without the hook and once with it, as
 * the webhook injects it:
 *   - create → every replica Ready, and the API requests it caused;
 *   - rollout restart → the rollout complete (every replica of the new
 *     template Ready), → every old pod gone, and the API requests;
 *   - the API server's CPU and response bytes over each;
 *   - with the hook, every hook container's working set and CPU, sampled
 *     every second as the kubelet counts them (hook-samples.ts): a hundred
 *     hooks starting at once, idle in a busy namespace, and releasing.
 * A Deployment's default strategy (25% surge, 25% unavailable), so the
 * rollout waits for new pods to be Ready as a user's would.
 *
 *   npm run bench:rollout -- [--replicas 100] [--trials 1] [--json FILE]
 *
 * Requests are every client's, counted by the API server
 * (`apiserver_request_total`): the controllers', the kubelets', the
 * operators' and the hooks'; the difference between the two modes is what
 * the hook adds. Plain and injected alternate, each in a namespace of its
 * own deleted before the next. The pods are injected by the pure injector
 * (src/injector) with the test image, not through the webhook: the webhook's
 * latency is bench:webhook's.
 *
 * Each injected pod requests the hook's CPU beside the operator's, so the
 * cluster must have room for 125% of the replicas: the benchmark says what it
 * needs and stops before creating anything when the nodes lack it (a
 * 100-replica run needs the three-node cluster: `npm run cluster:up --
 * --nodes 3`). Refuses to run outside the cluster's network namespace.
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { apps, connectTestCluster, core, createTestNamespace, refuseLeftovers } from '../support/kube.ts';
import { deleteNamespaceAndWait, grantReleaseHook, injectTemplate, kubectl } from '../support/leaderhook.ts';
import { applyOperatorRbac, operatorManifest } from '../support/operators.ts';
import { readBody, sendApiRequest } from '../support/raw-api.ts';
import { waitFor } from '../support/wait.ts';
import { optionsOrExit, parseBenchArgs } from './bench-args.ts';
import { HOOK_PHASES, type HookPhaseSummary, type HookSample, phaseSummary, phaseTable, sampleHooks } from './hook-samples.ts';
import { type ApiServerCost, type ApiServerSample, costBetween, sampleOf, sumOf } from './apiserver-metrics.ts';

const usage = `usage: npm run bench:rollout -- [--replicas 100] [--trials 1] [--json FILE]

  --replicas N   lease-operator replicas of the Deployment (default 100)
  --trials N     runs of each mode, plain and injected alternating (default 1)
  --json FILE    every figure, to a new file
`;
const args = optionsOrExit('bench:rollout', usage, () => parseBenchArgs(usage, { replicas: { default: 100, min: 1 }, trials: { default: 1, min: 1 } }));
const { replicas, trials } = args;
// after the options: --help and a bad option answer anywhere, before the cluster guard
connectTestCluster();
await refuseLeftovers('bench:rollout');

const OPERATOR = 'lease-operator';
/** The Deployment's default maxSurge: a rollout runs up to this share of replicas more pods. */
const SURGE = 0.25;
const ROLLOUT_TIMEOUT_MS = 20 * 60_000;

type Mode = 'plain' | 'injected';

interface Run {
  mode: Mode;
  trial: number;
  createSeconds: number;
  create: ApiServerCost;
  rolloutSeconds: number;
  oldPodsGoneSeconds: number;
  rollout: ApiServerCost;
  /** The hook containers' samples, injected runs only. */
  hooks?: HookPhaseSummary[];
}

const progress = (line: string) => process.stderr.write(`[rollout] ${line}\n`);

async function apiServer(): Promise<ApiServerSample> {
  return sampleOf(await readBody(await sendApiRequest('GET', '/metrics')), performance.now() / 1000);
}

/** Millicores of a quantity as the API writes CPU ("2", "1500m"). */
function milliCores(q: string | undefined): number {
  if (!q) return 0;
  return q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000;
}

function schedulable(node: V1Node): boolean {
  return !node.spec?.unschedulable && (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Requested CPU of the containers that run side by side: app containers and sidecars (plain init containers run before them; the operators here have none). */
function podCpuRequest(pod: V1Pod): number {
  const spec = pod.spec;
  const main = (spec?.containers ?? []).reduce((n, c) => n + milliCores(c.resources?.requests?.cpu), 0);
  const sidecars = (spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').reduce((n, c) => n + milliCores(c.resources?.requests?.cpu), 0);
  return main + sidecars;
}

/** Stops before anything is created when the schedulable nodes cannot hold the rollout's pods. */
async function checkRoom(): Promise<void> {
  const nodes = (await core.listNode()).items.filter(schedulable);
  const running = (await core.listPodForAllNamespaces({ fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' })).items;
  const names = new Set(nodes.map((n) => n.metadata?.name));
  const onNodes = running.filter((p) => names.has(p.spec?.nodeName));
  const podSlots = nodes.reduce((n, node) => n + Number(node.status?.allocatable?.pods ?? 0), 0) - onNodes.length;
  const cpu = nodes.reduce((n, node) => n + milliCores(node.status?.allocatable?.cpu), 0) - onNodes.reduce((n, p) => n + podCpuRequest(p), 0);
  const template = injectTemplate(operatorManifest(OPERATOR, { replicas })).spec.template as V1Pod;
  const pods = Math.ceil(replicas * (1 + SURGE));
  const needCpu = pods * podCpuRequest(template);
  if (pods > podSlots || needCpu > cpu) {
    throw new Error(
      `a rollout of ${replicas} injected replicas needs room for ${pods} pods and ${needCpu}m CPU requested; ` +
        `the ${nodes.length} schedulable node(s) have ${podSlots} pod slots and ${cpu}m CPU left. ` +
        'Grow the cluster (npm run cluster:up -- --nodes 3) or lower --replicas.',
    );
  }
  progress(`${nodes.length} node(s): room for ${podSlots} pods and ${cpu}m CPU; a rollout needs ${pods} pods and ${needCpu}m`);
}

/** Every replica of the current template Ready and available, and no other pod counted. */
async function rolloutComplete(namespace: string): Promise<boolean> {
  const d = await apps.readNamespacedDeployment({ name: OPERATOR, namespace });
  const s = d.status ?? {};
  const observed = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1);
  return observed && s.updatedReplicas === replicas && s.readyReplicas === replicas && s.availableReplicas === replicas && s.replicas === replicas;
}

async function podCount(namespace: string): Promise<number> {
  return (await core.listNamespacedPod({ namespace })).items.length;
}

async function runOnce(mode: Mode, trial: number): Promise<Run> {
  const ns = await createTestNamespace(`bench-rollout-${mode}`);
  const stopSampling = new AbortController();
  try {
    await applyOperatorRbac(ns.name);
    if (mode === 'injected') await grantReleaseHook(ns.name, 'test-operator');
    const manifest = operatorManifest(OPERATOR, { replicas });
    const deployment = mode === 'injected' ? injectTemplate(manifest) : manifest;

    const samples: HookSample[] = [];
    const sampler = mode === 'injected' ? sampleHooks(ns.name, samples, stopSampling.signal) : Promise.resolve();
    progress(`${mode} #${trial}: create ${replicas} replicas`);
    const c0 = await apiServer();
    const createdAt = performance.now();
    await apps.createNamespacedDeployment({ namespace: ns.name, body: deployment });
    await waitFor('every replica Ready', () => rolloutComplete(ns.name), ROLLOUT_TIMEOUT_MS, 250);
    const createSeconds = (performance.now() - createdAt) / 1000;
    const c1 = await apiServer();

    // the leader's first renewals and the controllers' settle before the restart
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    progress(`${mode} #${trial}: rollout restart (create took ${createSeconds.toFixed(1)} s)`);
    const r0 = await apiServer();
    const restartedAt = performance.now();
    kubectl(['-n', ns.name, 'rollout', 'restart', `deployment/${OPERATOR}`]);
    await waitFor('the rollout to start', async () => !(await rolloutComplete(ns.name)), 30_000, 100);
    await waitFor('the rollout to complete', () => rolloutComplete(ns.name), ROLLOUT_TIMEOUT_MS, 250);
    const rolloutSeconds = (performance.now() - restartedAt) / 1000;
    await waitFor('every old pod gone', async () => (await podCount(ns.name)) === replicas, ROLLOUT_TIMEOUT_MS, 250);
    const oldPodsGoneSeconds = (performance.now() - restartedAt) / 1000;
    const r1 = await apiServer();
    stopSampling.abort();
    await sampler;
    progress(`${mode} #${trial}: rollout complete in ${rolloutSeconds.toFixed(1)} s, old pods gone in ${oldPodsGoneSeconds.toFixed(1)} s`);
    const hooks = mode === 'injected' ? HOOK_PHASES.map((p) => phaseSummary(samples, p)) : undefined;
    return {
      mode,
      trial,
      createSeconds,
      create: costBetween(c0, c1),
      rolloutSeconds,
      oldPodsGoneSeconds,
      rollout: costBetween(r0, r1),
      ...(hooks ? { hooks } : {}),
    };
  } finally {
    stopSampling.abort();
    await deleteNamespaceAndWait(ns.name);
  }
}

await checkRoom();
const runs: Run[] = [];
for (let trial = 1; trial <= trials; trial++) {
  for (const mode of ['plain', 'injected'] as const) runs.push(await runOnce(mode, trial));
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
/** The largest of `counts` by `VERB resource`, most first, each as `format` writes it. */
function top(counts: Record<string, number>, format: (v: number) => string = String, n = 5): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${k} ${format(v)}`)
    .join(', ');
}
process.stdout.write(
  `# ${OPERATOR}, ${replicas} replicas, without and with the release hook; ${cpus().length} cores\n` +
    '| mode | trial | create → all Ready s | requests | API server CPU s | response MiB | restart → rollout complete s | → old pods gone s | requests | API server CPU s | response MiB | rollout requests (most first) | rollout response MiB (most first) |\n' +
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n' +
    runs
      .map(
        (r) =>
          `| ${r.mode} | ${r.trial} | ${r.createSeconds.toFixed(1)} | ${sumOf(r.create.requests)} | ${r.create.cpuSeconds.toFixed(1)} | ${mib(r.create.responseBytes)} | ` +
          `${r.rolloutSeconds.toFixed(1)} | ${r.oldPodsGoneSeconds.toFixed(1)} | ${sumOf(r.rollout.requests)} | ${r.rollout.cpuSeconds.toFixed(1)} | ${mib(r.rollout.responseBytes)} | ${top(r.rollout.requests)} | ${top(r.rollout.responseBytesByRequest, mib)} |`,
      )
      .join('\n') +
    '\n',
);
for (const r of runs) {
  if (r.hooks)
    process.stdout.write(
      `\n${phaseTable(`the release hook's containers, injected run ${r.trial}: ${replicas} created, then restarted; sampled every second`, r.hooks)}`,
    );
}
if (args.json) writeFileSync(args.json, `${JSON.stringify({ replicas, trials, cores: cpus().length, date: new Date().toISOString(), runs })}\n`);
