/**
 * What the release hook uses in its container, as the kubelet counts it,
 * to set the resources the injector asks for it: the working set of the
 * hook's cgroup (usage less inactive file pages) and its CPU, sampled every
 * second in a busy namespace through three phases:
 *   - start: the first 20 s of each hook container (Node's start, the lists),
 *   - idle: the operator's leader renewing its Lease every 2 s (the hooks'
 *     watches wake on each renewal), ConfigMaps of other workloads beside,
 *   - release: from the pod's deletion (`kubectl rollout restart`) until the
 *     hook ends (SIGTERM, R1, exit).
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node test/bench/hook-footprint.bench.ts \
 *     [--replicas 5] [--configmaps 2000] [--idle 60] [--json FILE]
 *
 * The lease-operator (controller-runtime) runs as a Deployment whose pods
 * the injector (src/injector) gave the hook with the test image, as the
 * webhook would. Refuses to run outside the cluster's network namespace.
 */
import { writeFileSync } from 'node:fs';
import { apps, connectTestCluster, core, createTestNamespace, refuseLeftovers } from '../support/kube.ts';
import { grantReleaseHook, injectTemplate, kubectl } from '../support/leaderhook.ts';
import { applyOperatorRbac, operatorManifest } from '../support/operators.ts';
import { waitFor } from '../support/wait.ts';
import { optionsOrExit, parseBenchArgs } from './bench-args.ts';
import { HOOK_PHASES, type HookSample, phaseSummary, phaseTable, START_PHASE_MS, sampleHooks } from './hook-samples.ts';

const usage = `usage: node test/bench/hook-footprint.bench.ts [--replicas 5] [--configmaps 2000] [--idle 60] [--json FILE]

  --replicas N     lease-operator replicas, each with the injected hook (default 5)
  --configmaps N   ConfigMaps of 10 KiB beside them in the namespace (default 2000)
  --idle S         seconds of the idle phase (default 60)
  --json FILE      every sample, to a new file
`;
const args = optionsOrExit('hook-footprint.bench.ts', usage, () =>
  parseBenchArgs(usage, {
    replicas: { default: 5, min: 1 },
    configmaps: { default: 2000, min: 0 },
    idle: { default: 60, min: 10 },
  }),
);
const { replicas, configmaps: configMaps, idle: idleSeconds } = args;
// after the options: --help and a bad option answer anywhere, before the cluster guard
connectTestCluster();
await refuseLeftovers('hook-footprint');

const progress = (line: string) => process.stderr.write(`[footprint] ${line}\n`);

async function fill(namespace: string): Promise<void> {
  const blob = 'x'.repeat(10 * 1024);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < configMaps; i = next++) {
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `data-${i}` }, data: { blob } } });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

const ns = await createTestNamespace('bench-footprint', { 'pod-security.kubernetes.io/enforce': 'restricted' });
const stop = new AbortController();
const samples: HookSample[] = [];
let sampler: Promise<void> | undefined;
try {
  await applyOperatorRbac(ns.name);
  await grantReleaseHook(ns.name, 'test-operator');
  progress(`${configMaps} ConfigMaps of 10 KiB`);
  await fill(ns.name);
  sampler = sampleHooks(ns.name, samples, stop.signal);
  progress(`lease-operator, ${replicas} replicas with the hook; then ${idleSeconds} s idle`);
  const deployment = injectTemplate(operatorManifest('lease-operator', { replicas }));
  const name = deployment.metadata?.name as string;
  await apps.createNamespacedDeployment({ namespace: ns.name, body: deployment });
  const allReady = async () => {
    const d = await apps.readNamespacedDeployment({ name, namespace: ns.name });
    return (d.status?.updatedReplicas ?? 0) === replicas && (d.status?.readyReplicas ?? 0) === replicas && (d.status?.replicas ?? 0) === replicas;
  };
  await waitFor('every replica ready', allReady, 180_000, 500);
  await new Promise((resolve) => setTimeout(resolve, START_PHASE_MS + idleSeconds * 1000));
  progress('rollout restart: every hook releases and ends');
  kubectl(['-n', ns.name, 'rollout', 'restart', `deployment/${name}`]);
  await waitFor('the rollout to finish', allReady, 300_000, 500);
  await waitFor('every old pod gone', async () => (await core.listNamespacedPod({ namespace: ns.name })).items.length === replicas, 120_000, 500);
} finally {
  stop.abort();
  await sampler;
  await ns.cleanup();
}

const phases = HOOK_PHASES.map((p) => phaseSummary(samples, p));
process.stdout.write(
  phaseTable(`the release hook's container, ${replicas} lease-operator replicas beside ${configMaps} ConfigMaps of 10 KiB, sampled every second`, phases),
);
if (args.json) writeFileSync(args.json, `${JSON.stringify({ replicas, configMaps, idleSeconds, phases, samples })}\n`);
