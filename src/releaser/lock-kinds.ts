/**
 * The two kinds of object that are a leader-for-life lock
 * (docs/design.md#what-counts-as-a-lock): a ConfigMap, and a Lease owned by
 * a pod (docs/design.md#leases-owned-by-a-pod). Both are read live and
 * deleted with preconditions of that read by the same code; only how each is
 * read, deleted and recognised differs, and that is here.
 */
import type { KubeClient, Preconditions, RequestOptions } from '../kube/client.ts';
import type { ConfigMap, Lease, OwnerReference } from '../kube/types.ts';
import type { PeeringScope } from './kopf-peering.ts';
import { leaseLockOwner, lockOwner } from './rules.ts';

/** A lock object of either kind; both carry their owner in metadata. */
export type LockObject = ConfigMap | Lease;

/** What reading and deleting a lock of either kind asks of the API. */
export type LockKindClient = Pick<KubeClient, 'getConfigMap' | 'deleteConfigMap' | 'getLease' | 'deleteLease'>;

export interface LockKind {
  readonly kind: 'ConfigMap' | 'Lease';
  /** The single Pod owner of a full object read live, when it is a lock. */
  owner(obj: LockObject): OwnerReference | undefined;
  read(client: LockKindClient, ns: string, name: string, opts: RequestOptions): Promise<LockObject>;
  delete(client: LockKindClient, ns: string, name: string, preconditions: Preconditions, opts: RequestOptions): Promise<void>;
  /** Why an object with a single Pod owner is not a lock, for the debug line. */
  readonly notALock: string;
  /** Whether its holder rewrites it while holding it (a Lease's renewTime): then an update alone is no reason to evaluate. */
  readonly renewable: boolean;
}

export const configMapLocks: LockKind = {
  kind: 'ConfigMap',
  owner: (obj) => lockOwner(obj as ConfigMap),
  read: (client, ns, name, opts) => client.getConfigMap(ns, name, opts),
  delete: (client, ns, name, pre, opts) => client.deleteConfigMap(ns, name, pre, opts),
  notALock: 'ConfigMap owned by a pod carries data: not a lock, left to garbage collection',
  renewable: false,
};

export const leaseLocks: LockKind = {
  kind: 'Lease',
  owner: (obj) => leaseLockOwner(obj as Lease),
  read: (client, ns, name, opts) => client.getLease(ns, name, opts),
  delete: (client, ns, name, pre, opts) => client.deleteLease(ns, name, pre, opts),
  notALock: 'Lease owned by a pod has spec.strategy (coordinated leader election): never released',
  renewable: true,
};

/** What a release can write: a lock of either kind, or a kopf peering object's entry (kopf-peering.ts). */
export type ReleasedKind = LockKind['kind'] | PeeringScope['kind'];

/** `Kind/name`, as log lines, Events and results name a lock. */
export function lockId(kind: { readonly kind: ReleasedKind }, name: string): string {
  return `${kind.kind}/${name}`;
}
