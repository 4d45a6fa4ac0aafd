/**
 * What a wait report may read of another pod's tracked lock
 * (docs/design.md#what-is-never-released): the lock's state as its tracker
 * holds it now, and no way to change it.
 */
import type { OwnerReference } from '../kube/types.ts';
import type { LockKind } from './lock-kinds.ts';
import type { HolderDecision, HolderLookup } from './rules.ts';

/** What a wait report reads of a tracked lock: live, and read-only. */
export interface ForeignLockView {
  /** ConfigMap, or a Lease owned by a pod (docs/design.md#leases-owned-by-a-pod). */
  readonly kind: LockKind['kind'];
  readonly name: string;
  readonly owner: OwnerReference;
  /** When this pod started waiting for this holder (clock ms). */
  readonly since: number;
  /** Whether the last live read found a lock: a ConfigMap with data is the pod's configuration, never reported. */
  readonly isLock: boolean;
  readonly holder: HolderLookup | undefined;
  readonly decision: HolderDecision | undefined;
}
