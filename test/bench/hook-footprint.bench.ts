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
import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { injectPod } from '../../src/injector/index.ts';
import { containerStatus } from '../support/container-runs.ts';
import { goldenSettings } from '../support/injection-settings.ts';
import { apps, connectTestCluster, core, createTestNamespace } from '../support/kube.ts';
import { grantReleaseHook, kubectl, leaderhookImage } from '../support/leaderhook.ts';
import { applyOperatorRbac, operatorManifest, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { waitFor } from '../support/wait.ts';
import { cgroupDirsOf, containerPid, readCgroup } from './container-cgroup.ts';
import { percentile } from './stats.ts';

connectTestCluster();

const usage = `usage: node test/bench/hook-footprint.bench.ts [--replicas 5] [--configmaps 2000] [--idle 60] [--json FILE]

  --replicas N     lease-operator replicas, each with the injected hook (default 5)
  --configmaps N   ConfigMaps of 10 KiB beside them in the namespace (default 2000)
  --idle S         seconds of the idle phase (default 60)
  --json FILE      every sample, to a new file
`;
const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '5' },
    configmaps: { type: 'string', default: '2000' },
    idle: { type: 'string', default: '60' },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
function whole(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be a whole number of at least ${min}, got ${value}\n${usage}`);
  return n;
}
const replicas = whole('replicas', values.replicas, 1);
const configMaps = whole('configmaps', values.configmaps, 0);
const idleSeconds = whole('idle', values.idle, 10);
if (values.json && existsSync(values.json)) throw new Error(`--json ${values.json} exists: give a new file`);

const START_PHASE_MS = 20_000;
type Phase = 'start' | 'idle' | 'release';

interface Sample {
  container: string;
  phase: Phase;
  at: number;
  workingSetMiB: number;
  /** CPU millicores since this container's previous sample; absent on its first. */
  milliCores?: number;
}

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

/** The lease-operator's Deployment with the hook injected into its template, as the webhook would. */
function injectedDeployment() {
  const deployment = operatorManifest('lease-operator', { replicas });
  const { metadata, spec } = deployment.spec.template;
  const injected: V1Pod = injectPod({ metadata, spec }, { ...goldenSettings, image: leaderhookImage, imagePullPolicy: 'Never' }).pod;
  deployment.spec.template = { metadata: injected.metadata, spec: injected.spec };
  return deployment;
}

/** Samples every running hook container of `namespace` every second until `stop` aborts. */
async function sampleHooks(namespace: string, samples: Sample[], stop: AbortSignal): Promise<void> {
  const last = new Map<string, { at: number; cpuNanos: number; dirs: ReturnType<typeof cgroupDirsOf> }>();
  while (!stop.aborted) {
    const tick = Date.now();
    const pods = (await core.listNamespacedPod({ namespace })).items;
    for (const pod of pods) {
      const status = containerStatus(pod, RELEASE_HOOK_CONTAINER);
      const id = status?.containerID;
      const started = status?.state?.running?.startedAt;
      if (!id || !started) continue;
      try {
        const known = last.get(id);
        const dirs = known?.dirs ?? cgroupDirsOf(containerPid(id, pod.spec?.nodeName));
        const reading = readCgroup(dirs);
        const at = performance.now();
        const phase: Phase = pod.metadata?.deletionTimestamp ? 'release' : Date.now() - new Date(started).getTime() < START_PHASE_MS ? 'start' : 'idle';
        samples.push({
          container: id,
          phase,
          at,
          workingSetMiB: reading.workingSetBytes / 2 ** 20,
          ...(known ? { milliCores: (reading.cpuNanos - known.cpuNanos) / 1e6 / ((at - known.at) / 1000) } : {}),
        });
        last.set(id, { at, cpuNanos: reading.cpuNanos, dirs });
      } catch {
        // the container ended between the list and the read: its last sample stands
      }
    }
    const rest = 1000 - (Date.now() - tick);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
}

function summary(samples: Sample[], phase: Phase) {
  const ws = samples.filter((s) => s.phase === phase).map((s) => s.workingSetMiB);
  const cpu = samples.filter((s) => s.phase === phase && s.milliCores !== undefined).map((s) => s.milliCores as number);
  return {
    phase,
    samples: ws.length,
    containers: new Set(samples.filter((s) => s.phase === phase).map((s) => s.container)).size,
    workingSetMiB: { p50: percentile(ws, 50), p99: percentile(ws, 99), max: Math.max(...ws) },
    milliCores: { p50: percentile(cpu, 50), p99: percentile(cpu, 99), max: Math.max(...cpu) },
  };
}

const ns = await createTestNamespace('bench-footprint', { 'pod-security.kubernetes.io/enforce': 'restricted' });
const stop = new AbortController();
const samples: Sample[] = [];
let sampler: Promise<void> | undefined;
try {
  await applyOperatorRbac(ns.name);
  await grantReleaseHook(ns.name, 'test-operator');
  progress(`${configMaps} ConfigMaps of 10 KiB`);
  await fill(ns.name);
  sampler = sampleHooks(ns.name, samples, stop.signal);
  progress(`lease-operator, ${replicas} replicas with the hook; then ${idleSeconds} s idle`);
  const deployment = injectedDeployment();
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

const phases = (['start', 'idle', 'release'] as const).map((p) => summary(samples, p));
const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
process.stdout.write(
  `# the release hook's container, ${replicas} lease-operator replicas beside ${configMaps} ConfigMaps of 10 KiB, sampled every second\n` +
    '| phase | containers | samples | working set MiB p50 / p99 / max | CPU mCPU p50 / p99 / max |\n| --- | ---: | ---: | ---: | ---: |\n' +
    phases
      .map(
        (p) =>
          `| ${p.phase} | ${p.containers} | ${p.samples} | ${f(p.workingSetMiB.p50)} / ${f(p.workingSetMiB.p99)} / ${f(p.workingSetMiB.max)} | ${f(p.milliCores.p50)} / ${f(p.milliCores.p99)} / ${f(p.milliCores.max)} |`,
      )
      .join('\n') +
    '\n',
);
if (values.json) writeFileSync(values.json, `${JSON.stringify({ replicas, configMaps, idleSeconds, phases, samples })}\n`);
