/**
 * The operators of test/operators as the cluster tests run them: their
 * containers, the leader lock each elects its leader by, deploying them
 * (RBAC, a Deployment or two bare pods) and recording them from before their
 * first pod exists (test/support/recorder.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import {
  loadAllYaml,
  type V1Affinity,
  type V1ConfigMap,
  type V1Deployment,
  type V1Lease,
  type V1PodTemplateSpec,
  type V1Role,
  type V1RoleBinding,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { apps, core, createTestNamespace, rbac } from './kube.ts';
import { type Observed, type Recording, startRecording } from './recorder.ts';
import { type LockUnderTest, lockHolderOf } from './split-brain.ts';

const operatorsDir = join(import.meta.dirname, '..', 'operators');

/** The operator's container in test/operators/manifests. */
export const OPERATOR_CONTAINER = 'operator';
/** The native sidecar leaderhook's webhook injects. */
export const RELEASE_HOOK_CONTAINER = 'leaderhook-release';

/**
 * Records `namespace` from now on (test/support/recorder.ts): the logs of
 * `containers` run by run, and the history of `locks` (by default every
 * operator's of test/operators), which finishRecording checks for split
 * brain.
 */
export function record(
  namespace: string,
  containers: string[] = [OPERATOR_CONTAINER],
  locks: LockUnderTest[] = [lflLock, leaseLock, clientGoLock, josdkLock],
): Promise<Recording> {
  return startRecording(namespace, containers, locks);
}

// ---------------------------------------------------------------------------
// Deploying an operator from test/operators

/**
 * How the operator runs: its Deployment of two replicas, or the same pod
 * template as two bare pods — nothing replaces a deleted pod, so the standby
 * that was waiting is the only candidate.
 */
export type Shape = 'deployment' | 'bare-pods';

export interface OperatorOptions {
  shape: Shape;
  /**
   * Removes the POD_NAME env of test/operators/manifests from the operator
   * container: in a namespace opted in to leaderhook the webhook adds it.
   */
  withoutPodNameEnv?: boolean;
  /** Extra arguments to the operator (e.g. `--ignore-sigterm`). */
  extraArgs?: string[];
  /** Extra pod annotations (e.g. leaderhook's grace-period annotation). */
  annotations?: Record<string, string>;
  /** The Deployment's replicas, instead of the manifest's 2. */
  replicas?: number;
  /** The pods' affinity (which nodes, apart from whom). */
  affinity?: V1Affinity;
}

/** Applies test/operators/rbac.yaml (ServiceAccount test-operator and the scaffold Roles) in `namespace`. */
export async function applyOperatorRbac(namespace: string): Promise<void> {
  for (const doc of loadAllYaml(readFileSync(join(operatorsDir, 'rbac.yaml'), 'utf8')) as { kind: string }[]) {
    switch (doc.kind) {
      case 'ServiceAccount':
        await core.createNamespacedServiceAccount({ namespace, body: doc as V1ServiceAccount });
        break;
      case 'Role':
        await rbac.createNamespacedRole({ namespace, body: doc as V1Role });
        break;
      case 'RoleBinding': {
        const binding = doc as V1RoleBinding;
        for (const subject of binding.subjects ?? []) subject.namespace = namespace;
        await rbac.createNamespacedRoleBinding({ namespace, body: binding });
        break;
      }
      default:
        throw new Error(`test/operators/rbac.yaml: unexpected kind ${doc.kind}`);
    }
  }
}

/** The Deployment of test/operators/manifests/<operator>.yaml, its pod template adjusted by `options`. */
export function operatorManifest(operator: string, options: Omit<OperatorOptions, 'shape'>): V1Deployment & { spec: { template: V1PodTemplateSpec } } {
  const [deployment] = loadAllYaml(readFileSync(join(operatorsDir, 'manifests', `${operator}.yaml`), 'utf8')) as V1Deployment[];
  assert.ok(deployment?.spec?.template?.spec, `test/operators/manifests/${operator}.yaml holds a Deployment`);
  const template = deployment.spec.template;
  for (const c of template.spec?.containers ?? []) {
    if (c.name !== OPERATOR_CONTAINER) continue;
    if (options.withoutPodNameEnv) c.env = c.env?.filter((e) => e.name !== 'POD_NAME');
    if (options.extraArgs) c.args = [...(c.args ?? []), ...options.extraArgs];
  }
  if (options.annotations) template.metadata = { ...template.metadata, annotations: { ...template.metadata?.annotations, ...options.annotations } };
  if (options.replicas !== undefined) deployment.spec.replicas = options.replicas;
  if (options.affinity && template.spec) template.spec.affinity = options.affinity;
  return deployment as V1Deployment & { spec: { template: V1PodTemplateSpec } };
}

/** Creates `operator` from test/operators/manifests in `namespace`, as a Deployment or two bare pods (`<operator>-a`, `-b`). */
export async function createOperator(namespace: string, operator: string, options: OperatorOptions): Promise<void> {
  const deployment = operatorManifest(operator, options);
  if (options.shape === 'deployment') {
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    return;
  }
  const { metadata, spec } = deployment.spec.template;
  for (const suffix of ['a', 'b']) {
    await core.createNamespacedPod({ namespace, body: { metadata: { ...metadata, name: `${operator}-${suffix}` }, spec } });
  }
}

/** test/operators/rbac.yaml, then the operator. */
export async function deployOperator(namespace: string, operator: string, options: OperatorOptions): Promise<void> {
  await applyOperatorRbac(namespace);
  await createOperator(namespace, operator, options);
}

export interface Scenario {
  namespace: string;
  recording: Recording;
}

/**
 * A namespace of its own (restricted Pod Security: the manifests must pass it
 * as they are), recorded from before the operator's first object exists, and
 * deleted after the test. `prepare` runs between the RBAC and the operator
 * (to bind the release hook's Role before the first pod starts).
 */
export async function setUpOperator(
  t: Pick<TestContext, 'after'>,
  init: {
    prefix: string;
    operator: string;
    options: OperatorOptions;
    labels?: Record<string, string>;
    containers?: string[];
    prepare?: (namespace: string) => Promise<void>;
  },
): Promise<Scenario> {
  const namespace = await createTestNamespace(init.prefix, { 'pod-security.kubernetes.io/enforce': 'restricted', ...init.labels });
  const recording = await record(namespace.name, init.containers, [leaderLockOf(init.operator)]);
  t.after(async () => {
    await recording.stop();
    await namespace.cleanup();
  });
  await applyOperatorRbac(namespace.name);
  await init.prepare?.(namespace.name);
  await createOperator(namespace.name, init.operator, init.options);
  return { namespace: namespace.name, recording };
}

// ---------------------------------------------------------------------------
// The operators' leader locks

/**
 * A leader lock of an operator under test and the ConfigMap its leader writes
 * heartbeats to: what every scenario needs to follow leadership from lock
 * to lock.
 */
export interface LeaderLock<L> extends LockUnderTest {
  /** Every recorded event of this lock, in arrival order. */
  events: (recording: Recording) => Observed<L>[];
  /** The pod that holds the lock; undefined when nobody does (a leaderless Lease). */
  holderOf: (lock: L | undefined) => string | undefined;
}

/** operator-lib's leader-for-life lock: its one ownerReference names the leader pod (the split-brain check: by UID). */
export const lflLock: LeaderLock<V1ConfigMap> = {
  kind: 'ConfigMap',
  name: 'lfl-operator-lock',
  heartbeat: 'lfl-operator-lock-heartbeat',
  events: (recording) => recording.configMaps.filter((event) => event.object.metadata?.name === 'lfl-operator-lock'),
  holderOf: (cm) => lockHolderOf('ConfigMap', cm)?.pod,
};

/** controller-runtime's Lease: its holderIdentity is `hostname_uuid`, and a pod's hostname is its name (the split-brain check: the whole identity). */
export const leaseLock: LeaderLock<V1Lease> = {
  kind: 'Lease',
  name: 'lease-operator-lock',
  heartbeat: 'lease-operator-lock-heartbeat',
  events: (recording) => recording.leases.filter((event) => event.object.metadata?.name === 'lease-operator-lock'),
  holderOf: (lease) => lockHolderOf('Lease', lease)?.pod,
};

/**
 * The Lease `name` of an operator whose LeaderElector holds it as the pod's
 * name, which every process of the pod shares (the split-brain check: the
 * whole identity, and a restarted container may go on under it).
 */
function podNameLease(name: string): LeaderLock<V1Lease> {
  return {
    kind: 'Lease',
    name,
    heartbeat: `${name}-heartbeat`,
    leaseIdentity: 'pod',
    events: (recording) => recording.leases.filter((event) => event.object.metadata?.name === name),
    holderOf: (lease) => lockHolderOf('Lease', lease)?.pod,
  };
}

/** client-go-operator's Lease: a LeaderElector holds it as the pod's name. */
export const clientGoLock = podNameLease('client-go-operator-lock');

/**
 * josdk-operator's Lease: the Java Operator SDK's LeaderElectionManager holds
 * it, through fabric8's LeaderElector, as $HOSTNAME, the pod's name.
 */
export const josdkLock = podNameLease('josdk-operator-lock');

/**
 * kopf-operator's peering (test/operators/kopf-operator), which is no lock: the
 * KopfPeering object `kopf-operator` holds one status entry per replica, keyed
 * by its pod's UID (POD_ID), and the replica of the highest priority runs. The
 * split-brain check follows it as a Lease held, as the pod's UID, by the entry
 * of the highest priority: test/e2e/kopf-operator.test.ts derives one such
 * revision from each write of the object.
 */
export const kopfPeering: LockUnderTest = { kind: 'Lease', name: 'kopf-operator', heartbeat: 'kopf-operator-heartbeat', leaseIdentity: 'uid' };

/** Every object of test/operators/manifests/<file>.yaml, in order (kopf-operator.yaml: its StatefulSet, Role, RoleBinding and KopfPeering). */
export function operatorObjects(file: string): { apiVersion?: string; kind: string; metadata?: { name?: string } }[] {
  return loadAllYaml(readFileSync(join(operatorsDir, 'manifests', `${file}.yaml`), 'utf8')) as { kind: string }[];
}

/** The lock each operator of test/operators elects its leader by. */
export function leaderLockOf(operator: string): LeaderLock<V1ConfigMap> | LeaderLock<V1Lease> {
  switch (operator) {
    case 'lfl-operator':
      return lflLock;
    case 'lease-operator':
      return leaseLock;
    case 'client-go-operator':
      return clientGoLock;
    case 'josdk-operator':
      return josdkLock;
    default:
      throw new Error(`no leader lock known for operator ${operator} (test/operators has lfl-operator, lease-operator, client-go-operator and josdk-operator)`);
  }
}
