/**
 * The live read of another pod's lock candidate: only a ConfigMap without
 * data, or a Lease without spec.strategy, is a lock
 * (docs/design.md#what-counts-as-a-lock), and only the version read may be
 * deleted (docs/design.md#live-reads-and-guarded-writes).
 */
import { isNotFound } from '../kube/errors.ts';
import type { OwnerReference } from '../kube/types.ts';
import { backgroundRequest, type ContextWithoutClient, type ForeignLockClient } from './context.ts';
import type { ForeignRelease } from './foreign-release.ts';
import type { HolderWatches } from './holder-watches.ts';
import type { LockSource } from './lock-cache.ts';
import { type LockKind, type LockObject, lockId } from './lock-kinds.ts';

/** What every tracked lock shares with the others. */
export interface ForeignLockDeps {
  readonly ctx: ContextWithoutClient;
  readonly kind: LockKind;
  readonly client: ForeignLockClient;
  /** A live read found the lock held by another owner than the one tracked: the cache sorts it again. */
  readonly cache: Pick<LockSource, 'put'>;
  readonly holders: Pick<HolderWatches, 'watch'>;
  readonly releaser: Pick<ForeignRelease, 'release'>;
  /** The lock is gone or released: it is tracked no more. */
  forget(name: string): void;
}

/**
 * Reads `name` in full: the lock when it is one of `holder`; `data` when it
 * is no lock (a ConfigMap with data, the pod's configuration; a Lease with
 * spec.strategy): never released; undefined when it
 * is gone, cannot be read (a retry is asked for), is tracked no more, or has
 * another owner now (the cache sorts it again).
 */
export async function readForeignLock(
  deps: Pick<ForeignLockDeps, 'ctx' | 'kind' | 'client' | 'cache' | 'forget'>,
  name: string,
  holder: OwnerReference,
  lock: { tracked(): boolean; retry(): void },
): Promise<LockObject | 'data' | undefined> {
  const { ctx, kind } = deps;
  const id = lockId(kind, name);
  let full: LockObject;
  try {
    full = await kind.read(deps.client, ctx.ns, name, backgroundRequest(ctx));
  } catch (err) {
    if (ctx.signal.aborted || !lock.tracked()) return undefined;
    if (isNotFound(err)) deps.forget(name);
    else {
      ctx.log.warn({ err, lock: id }, 'cannot read lock; will retry');
      lock.retry();
    }
    return undefined;
  }
  if (ctx.signal.aborted || !lock.tracked()) return undefined;
  const owner = kind.owner(full);
  if (owner && owner.uid !== holder.uid) {
    deps.cache.put(full);
    return undefined;
  }
  if (owner) return full;
  ctx.metrics.clearWaiting(name);
  ctx.log.debug({ lock: id, holder: holder.name }, kind.notALock);
  return 'data';
}
