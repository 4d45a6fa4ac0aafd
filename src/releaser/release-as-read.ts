/**
 * A write to a lock as it was read (docs/design.md#how-a-release-is-written):
 * guarded by what was read, retried once on a conflict while the lock is
 * still this pod's.
 */
import type { KubeClient, RequestOptions } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import type { KopfPeering, Lease } from '../kube/types.ts';
import type { HookContext } from './context.ts';
import { entryRemoval, hasPeerEntry, type PeeringScope, peeringNamespace } from './kopf-peering.ts';
import type { LockKind, LockKindClient, LockObject } from './lock-kinds.ts';
import { releasedLease } from './rules.ts';

/** What the guarded writes of the own locks ask of the API. */
export type OwnLockWriter = LockKindClient & Pick<KubeClient, 'updateLease' | 'getKopfPeering' | 'patchKopfPeering'>;

export type LockWriteOutcome = 'released' | 'moved';

/**
 * Applies `release` to a lock as it was read. On a conflict (someone wrote
 * it in between) re-reads it once and tries again only while it is still
 * this pod's; gone, or no longer ours, means someone else moved it.
 */
export async function releaseAsRead<T>(
  read: T,
  release: (lock: T) => Promise<unknown>,
  reread: () => Promise<T>,
  stillOurs: (lock: T) => boolean | Promise<boolean>,
): Promise<LockWriteOutcome> {
  try {
    await release(read);
    return 'released';
  } catch (err) {
    if (isNotFound(err)) return 'moved';
    if (!isConflict(err)) throw err;
  }
  let fresh: T;
  try {
    fresh = await reread();
  } catch (err) {
    if (isNotFound(err)) return 'moved';
    throw err;
  }
  if (!(await stillOurs(fresh))) return 'moved';
  try {
    await release(fresh);
    return 'released';
  } catch (err) {
    if (isNotFound(err) || isConflict(err)) return 'moved';
    throw err;
  }
}

/** Deletes the own lock (a ConfigMap, or a Lease owned by this pod) with preconditions {uid, resourceVersion} of what was read. */
export function releaseOwnLock(
  client: OwnLockWriter,
  self: Pick<HookContext, 'ns' | 'podUid'>,
  kind: LockKind,
  obj: LockObject,
  opts: RequestOptions,
): Promise<LockWriteOutcome> {
  const name = obj.metadata?.name as string;
  return releaseAsRead(
    obj,
    (lock) => kind.delete(client, self.ns, name, { uid: lock.metadata?.uid, resourceVersion: lock.metadata?.resourceVersion }, opts),
    () => kind.read(client, self.ns, name, opts),
    (lock) => kind.owner(lock)?.uid === self.podUid,
  );
}

/**
 * Writes the leaderless record over the own Lease, guarded by the
 * resourceVersion read; after a conflict, only while `stillOurs` proves the
 * version read again this pod's.
 */
export function releaseOwnLease(
  client: OwnLockWriter,
  self: Pick<HookContext, 'ns' | 'clock'>,
  lease: Lease,
  stillOurs: (current: Lease) => Promise<boolean>,
  opts: RequestOptions,
): Promise<LockWriteOutcome> {
  const name = lease.metadata?.name as string;
  return releaseAsRead(
    lease,
    (current) => client.updateLease(self.ns, releasedLease(current, self.clock.now()), opts),
    () => client.getLease(self.ns, name, opts),
    stillOurs,
  );
}

/**
 * Removes this pod's entry from a kopf peering object as it was read, with
 * the merge patch kopf's clean exit writes (docs/design.md#kopf-peering-entries);
 * after a conflict, only while the entry is still there.
 */
export function releaseOwnPeerEntry(
  client: OwnLockWriter,
  ownNamespace: string,
  scope: PeeringScope,
  peering: KopfPeering,
  identity: string,
  opts: RequestOptions,
): Promise<LockWriteOutcome> {
  const name = peering.metadata?.name as string;
  const ns = peeringNamespace(scope, ownNamespace);
  return releaseAsRead(
    peering,
    (current) => client.patchKopfPeering(ns, name, entryRemoval(current, identity), opts),
    () => client.getKopfPeering(ns, name, opts),
    (current) => hasPeerEntry(current, identity),
  );
}
