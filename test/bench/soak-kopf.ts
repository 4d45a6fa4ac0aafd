/**
 * kopf-operator in the soak: a namespace set up as test/e2e/kopf-operator.test.ts
 * sets one up (kopf's Role, binding and KopfPeering; with leaderhook, the
 * hook's Roles, kopf's peering grant among them), its peering recorded, and
 * two bare pods of the StatefulSet template of
 * test/operators/manifests/kopf-operator.yaml kept running by the soak itself
 * (soak-operators.ts says why not by the StatefulSet). A pod that goes is
 * replaced by one named with the next ordinal, so of a priority below every
 * replica before it: it joins paused and never takes over from a leader.
 */
import type { V1Pod, V1PodSpec, V1PodTemplateSpec } from '@kubernetes/client-node';
import { createOperatorNamespace, type OperatorsNamespace } from '../support/failover-trial.ts';
import { peerIdentities } from '../support/kopf-peering.ts';
import { applyKopfObjects, releaseAnchor } from '../support/kopf-scenario.ts';
import { apiStatus, core } from '../support/kube.ts';
import { grantKopfPeering, grantReleaseHook, kubectl } from '../support/leaderhook.ts';
import { applyOperatorRbac, kopfPeering, OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { type Recording, startRecording } from '../support/recorder.ts';
import { waitFor } from '../support/wait.ts';
import { canNeverRun, type LeaderTracker } from './soak-leaders.ts';

/** As the other operators' Deployments: a leader and a standby. */
export const KOPF_REPLICAS = 2;

/** The StatefulSet's name: a pod's ordinal ends its name, and kopf-operator derives its priority from it (100 - ordinal). */
const POD_PREFIX = 'kopf-operator-';

/**
 * The pod to create next, or undefined. `created` are the pods made so far,
 * in order; `pods` the recording's last look at each (a name it never saw is
 * one just created). Live is neither going nor ended. A new pod waits until
 * every live one has joined the peering (`joined`: the UIDs with an entry),
 * so that it starts seeing the entries above it and stays paused: two made at
 * once could start in either order, and the later, higher one would take over.
 */
export function nextKopfPod(
  created: readonly string[],
  pods: ReadonlyMap<string, V1Pod | undefined>,
  joined: ReadonlySet<string>,
  replicas = KOPF_REPLICAS,
): string | undefined {
  const live = created.filter((name) => !pods.has(name) || !(canNeverRun(pods.get(name)) || pods.get(name)?.metadata?.deletionTimestamp));
  if (live.length >= replicas) return undefined;
  const joining = live.some((name) => {
    const uid = pods.get(name)?.metadata?.uid;
    return uid === undefined || !joined.has(uid);
  });
  return joining ? undefined : `${POD_PREFIX}${created.length}`;
}

/** The UIDs with an entry in the peering's last recorded revision. */
export function joinedPeers(recording: Pick<Recording, 'kopfPeerings'>): Set<string> {
  const last = recording.kopfPeerings.findLast((event) => event.object.metadata?.name === kopfPeering.name);
  return last && last.type !== 'DELETED' ? peerIdentities(last.object) : new Set();
}

/** Keeps KOPF_REPLICAS bare pods of kopf-operator in one namespace, one at a time (nextKopfPod). */
export class KopfReplicas {
  readonly #namespace: string;
  readonly #recording: Recording;
  readonly #template: V1PodTemplateSpec & { spec: V1PodSpec };
  readonly #created: string[] = [];

  constructor(namespace: string, recording: Recording, template: V1PodTemplateSpec & { spec: V1PodSpec }) {
    this.#namespace = namespace;
    this.#recording = recording;
    this.#template = template;
  }

  get namespace(): string {
    return this.#namespace;
  }

  /** Creates the next pod where one is due; the pod created, if any. */
  async keep(): Promise<string | undefined> {
    const name = nextKopfPod(this.#created, this.#recording.podNow, joinedPeers(this.#recording));
    if (name === undefined) return undefined;
    const { metadata, spec } = this.#template;
    try {
      await core.createNamespacedPod({ namespace: this.#namespace, body: { metadata: { ...structuredClone(metadata), name }, spec: structuredClone(spec) } });
    } catch (error) {
      // a create the API server made but whose answer was lost: made all the same
      if (apiStatus(error) !== 409) throw error;
    }
    this.#created.push(name);
    return name;
  }

  /** The live pods that have joined the peering. */
  joined(): number {
    const joined = joinedPeers(this.#recording);
    return [...this.#recording.podNow.values()].filter((pod) => !canNeverRun(pod) && !pod?.metadata?.deletionTimestamp && joined.has(pod?.metadata?.uid ?? ''))
      .length;
  }
}

export interface KopfNamespace extends OperatorsNamespace {
  replicas: KopfReplicas;
}

/** Deletes the namespace and waits until it is gone, taking kopf's finalizer off its anchor ConfigMap, which only a running kopf removes. */
export async function deleteKopfNamespace(name: string): Promise<void> {
  await core.deleteNamespace({ name }).catch((error: unknown) => {
    if (apiStatus(error) !== 404) throw error;
  });
  await releaseAnchor(name);
  await waitFor(
    `namespace ${name} to be gone`,
    async () =>
      core.readNamespace({ name }).then(
        () => false,
        (error: unknown) => apiStatus(error) === 404,
      ),
    120_000,
    500,
  );
}

/** kopf's CRDs, cluster-wide; left in place at the end, as bench:kopf and the e2e leave them. */
export function applyKopfCrds(): void {
  kubectl(['apply', '--server-side', '-f', 'test/operators/manifests/kopf-peering-crds.yaml']);
  kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/kopfpeerings.kopf.dev', 'crd/clusterkopfpeerings.kopf.dev']);
}

/**
 * Creates (or re-creates) namespace `name` for kopf-operator, recorded,
 * KopfPeering included, from before its first object; no pod yet: the first
 * keep() of its replicas makes the first.
 */
export async function createKopfNamespace(
  name: string,
  {
    withLeaderhook,
    labels = {},
    extraArgs = [],
    annotations = {},
  }: { withLeaderhook: boolean; labels?: Record<string, string>; extraArgs?: string[]; annotations?: Record<string, string> },
): Promise<KopfNamespace> {
  await deleteKopfNamespace(name);
  await createOperatorNamespace(name, { withLeaderhook, labels });
  const recording = await startRecording(name, withLeaderhook ? [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER] : [OPERATOR_CONTAINER], [kopfPeering], {
    kopfPeerings: true,
  });
  await applyOperatorRbac(name);
  if (withLeaderhook) {
    await grantReleaseHook(name, 'test-operator');
    await grantKopfPeering(name, 'test-operator');
  }
  // caught in the watch's first list, the object's creation would be a stretch unseen from rv 0, which no soak check counts
  const template = await applyKopfObjects(name);
  template.metadata = { ...template.metadata, annotations: { ...template.metadata?.annotations, ...annotations } };
  for (const container of template.spec.containers) if (container.name === OPERATOR_CONTAINER) container.args = [...(container.args ?? []), ...extraArgs];
  return { name, withLeaderhook, recording, replicas: new KopfReplicas(name, recording, template) };
}

/** Keeps the replicas until a pod leads (the tracker's leader) and the other has joined the peering below it. */
export async function waitForKopfLeader(replicas: KopfReplicas, tracker: LeaderTracker, timeoutMs: number): Promise<string> {
  return waitFor(
    `kopf-operator in ${replicas.namespace} to have a leader and a standby`,
    async () => {
      await replicas.keep();
      const { leader } = tracker.look();
      return replicas.joined() >= KOPF_REPLICAS && leader;
    },
    timeoutMs,
    1_000,
  );
}
