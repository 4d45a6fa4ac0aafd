/**
 * The live read of another pod's lock candidate: only a ConfigMap without
 * data is a lock (docs/design.md#what-counts-as-a-lock), and only the version
 * read may be deleted (docs/design.md#live-reads-and-guarded-writes).
 */
import { isNotFound } from '../kube/errors.ts';
import type { ConfigMap, OwnerReference } from '../kube/types.ts';
import { backgroundRequest } from './context.ts';
import type { ForeignLockDeps } from './foreign-lock.ts';
import { lockOwner } from './rules.ts';

/**
 * Reads `name` in full: the lock when it is one of `holder`; `data` when it
 * carries data (the pod's configuration, never released); undefined when it
 * is gone, cannot be read (a retry is asked for), is tracked no more, or has
 * another owner now (the cache sorts it again).
 */
export async function readForeignLock(
  deps: Pick<ForeignLockDeps, 'ctx' | 'client' | 'cache' | 'forget'>,
  name: string,
  holder: OwnerReference,
  lock: { tracked(): boolean; retry(): void },
): Promise<ConfigMap | 'data' | undefined> {
  const { ctx } = deps;
  let full: ConfigMap;
  try {
    full = await deps.client.getConfigMap(ctx.ns, name, backgroundRequest(ctx));
  } catch (err) {
    if (ctx.signal.aborted || !lock.tracked()) return undefined;
    if (isNotFound(err)) deps.forget(name);
    else {
      ctx.log.warn({ err, lock: `ConfigMap/${name}` }, 'cannot read lock; will retry');
      lock.retry();
    }
    return undefined;
  }
  if (ctx.signal.aborted || !lock.tracked()) return undefined;
  const owner = lockOwner(full);
  if (owner && owner.uid !== holder.uid) {
    deps.cache.put(full);
    return undefined;
  }
  if (owner) return full;
  ctx.metrics.clearWaiting(name);
  ctx.log.debug({ lock: `ConfigMap/${name}`, holder: holder.name }, 'ConfigMap owned by a pod carries data: not a lock, left to garbage collection');
  return 'data';
}
