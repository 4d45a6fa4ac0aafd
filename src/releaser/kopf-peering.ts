/**
 * kopf's peering entries (docs/design.md#kopf-peering-entries), as pure
 * functions of what the API said. kopf keeps no lock: each operator writes
 * `status.<identity>: {priority, lifetime, lastseen}` into a peering object,
 * and a clean exit merge-patches its own entry to null. The hook removes an
 * entry the same way, only when the identity is a pod's UID: a UID names one
 * pod in the whole cluster, where a pod name or a literal POD_ID can be
 * written by another process the hook cannot see.
 */
import type { KopfPeering, Pod } from '../kube/types.ts';

/** kopf's two peering resources: a namespaced operator's, read in the hook's own namespace, and a cluster-wide operator's. */
export interface PeeringScope {
  readonly kind: 'KopfPeering' | 'ClusterKopfPeering';
  readonly namespaced: boolean;
}

export const peeringScopes: readonly PeeringScope[] = [
  { kind: 'KopfPeering', namespaced: true },
  { kind: 'ClusterKopfPeering', namespaced: false },
];

/** The namespace argument of the client's peering calls: the hook's own, or undefined for cluster scope. */
export function peeringNamespace(scope: PeeringScope, ownNamespace: string): string | undefined {
  return scope.namespaced ? ownNamespace : undefined;
}

/** The env variable kopf takes its identity from (kopf detect_own_id). */
export const KOPF_IDENTITY_ENV = 'POD_ID';

/** The identity, or why there is none: `why` is unset when no container sets POD_ID (nothing to explain). */
export type KopfIdentity = { identity: string; why?: undefined } | { identity?: undefined; why?: string };

/**
 * The identity the pod's kopf operator writes its entries under, when the
 * hook can prove it: every container that sets POD_ID sets it from the
 * downward API's metadata.uid. Any other source (the pod's name, a literal,
 * a ConfigMap key) is an identity another pod or process may carry too, so
 * the entries are left to kopf.
 */
export function kopfIdentity(pod: Pod): KopfIdentity {
  const uid = pod.metadata?.uid;
  const sources: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    // the last definition of a name wins, as the kubelet resolves it
    const env = (c.env ?? []).filter((e) => e.name === KOPF_IDENTITY_ENV).at(-1);
    if (!env) continue;
    const field = env.valueFrom?.fieldRef?.fieldPath;
    sources.push(field ? `fieldRef ${field}` : env.valueFrom ? 'a ConfigMap or Secret key' : 'a literal value');
  }
  if (sources.length === 0) return {};
  const others = sources.filter((s) => s !== 'fieldRef metadata.uid');
  if (others.length > 0 || !uid) {
    return {
      why: `${KOPF_IDENTITY_ENV} comes from ${[...new Set(others)].join(', ')}, not the pod's UID: another pod or process may write entries under it, so kopf's entries are left to kopf (set ${KOPF_IDENTITY_ENV} from metadata.uid)`,
    };
  }
  return { identity: uid };
}

/** Whether the peering object has a (non-null) entry for `identity`. */
export function hasPeerEntry(peering: KopfPeering | undefined, identity: string): boolean {
  const entry = peering?.status?.[identity];
  return entry !== undefined && entry !== null;
}

/** The identities with an entry in the peering object, except `own`. */
export function otherPeerIdentities(peering: KopfPeering, own: string): string[] {
  return Object.entries(peering.status ?? {})
    .filter(([id, entry]) => id !== own && entry !== null && entry !== undefined)
    .map(([id]) => id);
}

/**
 * The merge patch that removes `identity`'s entry exactly as kopf's clean
 * exit does (a null), guarded by the resourceVersion read: the API server
 * answers 409 if the object changed since.
 */
export function entryRemoval(peering: KopfPeering, identity: string): KopfPeering {
  return { metadata: { resourceVersion: peering.metadata?.resourceVersion }, status: { [identity]: null } };
}

/** How log lines, Events and results name a peering object's entry. */
export function peerEntryId(scope: PeeringScope, name: string): string {
  return `${scope.kind}/${name}`;
}
