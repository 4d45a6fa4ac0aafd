/**
 * The faults the e2e tests and `npm run bench:faults` put the local cluster
 * through, each done as it happens to a real cluster: the kubelet stopped
 * (SIGTERM by its PID, as `systemctl stop` does) until the node is NotReady,
 * the kube-apiserver killed (SIGKILL by its PID, as a crash or an OOM kill),
 * the webhook scaled to 0, and a leader evicted by the kubelet for writing
 * past its ephemeral-storage limit. A stopped component is started again by
 * test/cluster/up.sh, which starts only what is not running.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { applyOperatorRbac, OPERATOR_CONTAINER, operatorManifest, RELEASE_HOOK_CONTAINER, record } from './operators.ts';
import { logOf } from './recording.ts';
import type { Recording } from './recorder.ts';
import { broughtOwnCluster, clusterStateDir, core, createTestNamespace, rbac, type TestNamespace } from './kube.ts';
import { waitFor } from './wait.ts';
import { grantReleaseHook, INJECTION_LABEL, kubectl } from './leaderhook.ts';
import { recordedPid } from './nodes.ts';
import { repo } from './tools.ts';

const pidFile = (component: string) => join(clusterStateDir, 'pids', `${component}.pid`);

/** Why the cluster-process faults cannot run here, or undefined when they can. */
export function clusterProcessFaultsUnavailable(): string | undefined {
  if (broughtOwnCluster) return 'needs the local cluster: its kubelet and kube-apiserver are processes of this machine';
  for (const component of ['kubelet', 'kube-apiserver']) {
    if (!existsSync(pidFile(component))) return `no ${pidFile(component)}: start the local cluster with npm run cluster:up`;
  }
  return undefined;
}

/** Starts again whatever of the local cluster is not running. */
export function startStoppedComponents(): void {
  execFileSync('bash', [join(repo, 'test/cluster/up.sh')], { stdio: ['ignore', 'ignore', 'pipe'] });
}

async function nodeReady(): Promise<string | undefined> {
  const nodes = await core.listNode();
  return nodes.items[0]?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

/**
 * Runs `body` with the kubelet stopped, from the moment the node is NotReady
 * (Unknown: the kubelet stopped posting status, after the controller
 * manager's node-monitor-grace-period); the kubelet is started again and the
 * node waited Ready whatever happens. The containers keep running: containerd
 * runs them, not the kubelet.
 */
export async function whileNodeNotReady<T>(body: (notReadyAt: number) => Promise<T>): Promise<T> {
  process.kill(recordedPid('kubelet'), 'SIGTERM');
  try {
    await waitFor('the node to turn NotReady (the kubelet stopped posting status)', async () => (await nodeReady()) !== 'True', 120_000, 1000);
    return await body(Date.now());
  } finally {
    startStoppedComponents();
    await waitFor('the node to be Ready again', async () => (await nodeReady()) === 'True', 120_000, 1000);
  }
}

/**
 * Kills the kube-apiserver (a SIGTERM'd one drains for a minute first),
 * leaves it down for `downMs` — long enough for every watch to fail and back
 * off — and starts it again; resolves once it answers. Returns the time it
 * was killed.
 */
export async function killAndRestartApiServer(downMs = 5_000): Promise<number> {
  const pid = recordedPid('kube-apiserver');
  const killedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  // gone, or a zombie nobody reaps (the machine's init may not): either way it serves nothing
  const exited = () => !existsSync(`/proc/${pid}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  await waitFor('kube-apiserver to exit', async () => exited(), 60_000, 100);
  await new Promise((resolve) => setTimeout(resolve, downMs));
  startStoppedComponents();
  await waitFor('the API server to answer', () => core.listNamespace({ limit: 1 }), 60_000, 250);
  return killedAt;
}

/** A pod that only has to start, restricted-compliant, never injected: proof the kubelet acts on the API again. */
function kubeletProbePod(name: string): V1Pod {
  return {
    metadata: { name, labels: { 'leaderhook.io/inject': 'false' } },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'pause',
          image: 'leaderhook.local/pause:3.10',
          imagePullPolicy: 'Never',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  };
}

/**
 * Waits until the kubelet starts a new pod in `namespace` again: after an
 * API server outage its own watches back off for a while (up to ~90 s here),
 * and only then does it act on a delete.
 */
export async function waitForKubeletToAct(namespace: string, timeoutMs = 240_000): Promise<void> {
  const name = `kubelet-probe-${Date.now().toString(36)}`;
  await core.createNamespacedPod({ namespace, body: kubeletProbePod(name) });
  await waitFor(
    'the kubelet to start a new pod again',
    async () => (await core.readNamespacedPod({ name, namespace })).status?.phase === 'Running',
    timeoutMs,
    500,
  );
  await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
}

export const WEBHOOK_NAMESPACE = 'leaderhook-system';

/** The webhook's pods, as deploy/ labels them. */
export async function webhookPods(): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: WEBHOOK_NAMESPACE, labelSelector: 'app.kubernetes.io/component=webhook' })).items;
}

/** Ready and not going away: a pod that serves. */
export const servingPod = (pod: V1Pod): boolean =>
  !pod.metadata?.deletionTimestamp && (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** Scales the webhook's Deployment and waits for that many ready replicas (0: no webhook pod left at all). */
export async function scaleWebhook(replicas: number): Promise<void> {
  kubectl(['-n', WEBHOOK_NAMESPACE, 'scale', 'deployment/leaderhook-webhook', `--replicas=${replicas}`]);
  await waitFor(
    `the webhook at ${replicas} ready replicas`,
    async () => {
      const pods = await webhookPods();
      const ready = pods.filter(servingPod);
      return replicas === 0 ? pods.length === 0 : ready.length === replicas;
    },
    120_000,
    250,
  );
}

/** How far past its limit the evicted leader writes: far enough that one eviction check sees it. */
const FILL_MIB = 64;
const EPHEMERAL_STORAGE_LIMIT = '16Mi';

/** A bare lfl-operator pod `name`: nothing recreates it once it is gone. */
export function bareOperatorPod(
  name: string,
  { withLeaderhook, extraArgs = [], restartPolicy = 'Always' }: { withLeaderhook: boolean; extraArgs?: string[]; restartPolicy?: 'Always' | 'Never' },
): V1Pod {
  const { metadata, spec } = operatorManifest('lfl-operator', { withoutPodNameEnv: withLeaderhook, extraArgs }).spec.template;
  return { metadata: { ...metadata, name }, spec: { ...spec!, restartPolicy } };
}

/**
 * A bare lfl-operator pod `name` that is never restarted; `fillsDisk`: once
 * it leads it writes past its container's ephemeral-storage limit, and the
 * kubelet's eviction manager evicts it.
 */
export function evictableOperatorPod(name: string, { withLeaderhook, fillsDisk }: { withLeaderhook: boolean; fillsDisk: boolean }): V1Pod {
  const fill = fillsDisk ? [`--fill-disk-mib=${FILL_MIB}`, '--fill-disk-path=/scratch/fill'] : [];
  const pod = bareOperatorPod(name, { withLeaderhook, extraArgs: fill, restartPolicy: 'Never' });
  if (fillsDisk) {
    const operator = pod.spec!.containers.find((c) => c.name === OPERATOR_CONTAINER)!;
    operator.resources = { ...operator.resources, limits: { ...operator.resources?.limits, 'ephemeral-storage': EPHEMERAL_STORAGE_LIMIT } };
    operator.volumeMounts = [...(operator.volumeMounts ?? []), { name: 'scratch', mountPath: '/scratch' }];
    pod.spec!.volumes = [...(pod.spec!.volumes ?? []), { name: 'scratch', emptyDir: {} }];
  }
  return pod;
}

export interface LeaderAndStandby {
  ns: TestNamespace;
  recording: Recording;
}

/**
 * A recorded namespace (opted in with leaderhook) with two bare lfl-operator
 * pods: `leader`, created first and waited for until it leads, then
 * `standby`, waited for until it tries for the lock. `podDelete: false`
 * takes pod deletion from the scaffold's RBAC, so operator-lib cannot
 * delete a leader it thinks is evicted.
 */
export async function createLeaderAndStandby(
  prefix: string,
  { withLeaderhook, podDelete, leader, standby }: { withLeaderhook: boolean; podDelete: boolean; leader: V1Pod; standby: V1Pod },
): Promise<LeaderAndStandby> {
  const ns = await createTestNamespace(prefix, withLeaderhook ? INJECTION_LABEL : {});
  const recording = await record(ns.name, withLeaderhook ? [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER] : [OPERATOR_CONTAINER]);
  try {
    await applyOperatorRbac(ns.name);
    if (!podDelete) await withoutPodDelete(ns.name);
    if (withLeaderhook) await grantReleaseHook(ns.name, 'test-operator');
    await core.createNamespacedPod({ namespace: ns.name, body: leader });
    await waitFor(`pod ${leader.metadata?.name} to lead`, async () => logOf(recording, leader.metadata!.name!, 'became leader'), 120_000);
    await core.createNamespacedPod({ namespace: ns.name, body: standby });
    await waitFor(`pod ${standby.metadata?.name} to try for the lock`, async () => logOf(recording, standby.metadata!.name!, 'trying'), 120_000);
  } catch (error) {
    await recording.stop();
    await ns.cleanup();
    throw error;
  }
  return { ns, recording };
}

/** Removes `pods` from the scaffold's catch-all rule (test/operators/rbac.yaml): operator-lib can no longer delete an evicted leader. */
export async function withoutPodDelete(namespace: string): Promise<void> {
  const role = await rbac.readNamespacedRole({ name: 'manager-role', namespace });
  for (const rule of role.rules ?? []) {
    if (rule.verbs.includes('*')) rule.resources = (rule.resources ?? []).filter((r) => r !== 'pods');
  }
  await rbac.replaceNamespacedRole({ name: 'manager-role', namespace, body: role });
}

/**
 * Waits until the kubelet has evicted `pod`: its eviction manager's Event,
 * and the pod terminal, as last seen. The phase is Failed with reason
 * Evicted, or — when the operator exits 0 on the kubelet's SIGTERM before
 * the eviction's own status lands — Succeeded without a reason. The object
 * may be gone already where operator-lib may delete an evicted leader.
 */
export async function waitForEviction(recording: Recording, pod: string, timeoutMs = 240_000): Promise<{ at: number; pod: V1Pod; message: string }> {
  return waitFor(
    `the kubelet to evict ${pod} for its ephemeral storage`,
    async () => {
      const evicted = recording.events.find((e) => e.object.reason === 'Evicted' && e.object.involvedObject?.name === pod);
      const last = recording.pods.filter((e) => e.object.metadata?.name === pod).at(-1);
      const terminal = last?.object.status?.phase === 'Failed' || last?.object.status?.phase === 'Succeeded' || last?.type === 'DELETED';
      return evicted && terminal && last && { at: evicted.at, pod: last.object, message: evicted.object.message ?? '' };
    },
    timeoutMs,
    1000,
  );
}
