/**
 * One lock (ConfigMap, or Lease owned by a pod) held by another pod
 * (docs/design.md#r2-holder-terminal, docs/design.md#r3-holder-gone): read in
 * full once per version (docs/design.md#what-counts-as-a-lock), its holder
 * read live on every change, one evaluation at a time.
 */
import { isNotFound } from '../kube/errors.ts';
import type { OwnerReference } from '../kube/types.ts';
import { backgroundRequest } from './context.ts';
import { type ForeignLockDeps, readForeignLock } from './foreign-lock-read.ts';
import type { ForeignLockView } from './foreign-lock-view.ts';
import type { ReleaseTarget } from './foreign-release.ts';
import { type LockKind, type LockObject, lockId } from './lock-kinds.ts';
import { BackoffRetry } from './retry.ts';
import { decideHolderRelease, type HolderDecision, type HolderLookup, notFound } from './rules.ts';
import { KeyedSerializer } from './serializer.ts';

export type { ForeignLockDeps } from './foreign-lock-read.ts';

export class ForeignLock implements ForeignLockView {
  readonly kind: LockKind['kind'];
  readonly name: string;
  readonly owner: OwnerReference;
  readonly since: number;
  readonly #deps: ForeignLockDeps;
  /** As the cache delivered it (metadata only for a ConfigMap). */
  #cm: LockObject;
  /** The full object read live at `#verifiedRv` when it is a lock: its preconditions guard the delete. */
  #lock: LockObject | undefined;
  /** The metadata resourceVersion the last live read was made for. */
  #verifiedRv: string | undefined;
  readonly #retry = new BackoffRetry(() => void this.evaluate());
  #holder: HolderLookup | undefined;
  #decision: HolderDecision | undefined;
  /** False once forgotten or replaced by a new holder's lock: its evaluations stop. */
  #tracked = true;
  readonly #passes = new KeyedSerializer<ForeignLock>();

  constructor(deps: ForeignLockDeps, cm: LockObject, owner: OwnerReference) {
    this.#deps = deps;
    this.kind = deps.kind.kind;
    this.#cm = cm;
    this.name = cm.metadata?.name as string;
    this.owner = owner;
    this.since = deps.ctx.clock.now();
  }

  get isLock(): boolean {
    return this.#lock !== undefined;
  }

  get holder(): HolderLookup | undefined {
    return this.#holder;
  }

  get decision(): HolderDecision | undefined {
    return this.#decision;
  }

  /** The cache delivered a newer version of the lock's metadata. */
  update(cm: LockObject): void {
    this.#cm = cm;
  }

  /** Forgotten, replaced by a new holder's lock, or the hook stops. */
  untrack(): void {
    this.#tracked = false;
    this.#retry.cancel();
  }

  /** Reads the holder live and applies R2/R3 (R0 when the holder has our name); an event only triggers this. */
  evaluate(): Promise<void> {
    return this.#passes.run(this, () => this.#evaluateOnce());
  }

  /** One evaluation; false when it stopped early (lock gone or replaced, or a retry scheduled). */
  async #evaluateOnce(): Promise<boolean> {
    const { ctx, client } = this.#deps;
    if (ctx.signal.aborted || !this.#tracked) return false;
    if (!(await this.#verify())) return false;
    let holder: HolderLookup;
    try {
      holder = await client.getPod(ctx.ns, this.owner.name, backgroundRequest(ctx));
    } catch (err) {
      if (isNotFound(err)) holder = notFound;
      else {
        if (!ctx.signal.aborted) {
          ctx.log.warn({ err, lock: lockId(this.#deps.kind, this.name) }, 'cannot read holder pod; will retry');
          this.#retry.schedule();
        }
        return false;
      }
    }
    if (ctx.signal.aborted || !this.#tracked) return false;
    const decision = decideHolderRelease(holder, this.owner);
    this.#holder = holder;
    this.#decision = decision;
    if (decision.release) {
      const rule = this.owner.name === ctx.podName ? 'R0' : decision.rule;
      if ((await this.#deps.releaser.release(this.#releaseTarget(), rule, decision.message)) === 'retry') this.#retry.schedule();
    } else {
      this.#retry.succeeded();
      // Every event of a lock or its holder that keeps it comes here: build the line only when it is written.
      if (ctx.log.isLevelEnabled('debug')) {
        ctx.log.debug(
          { lock: lockId(this.#deps.kind, this.name), holder: this.owner.name, holderState: decision.state },
          `holder read live: ${decision.message}; lock kept`,
        );
      }
    }
    return true;
  }

  /** Reads the lock in full once per version: true when it is a lock of the same holder. */
  async #verify(): Promise<boolean> {
    const rv = this.#cm.metadata?.resourceVersion;
    if (this.#verifiedRv === rv) return this.#lock !== undefined;
    const read = await readForeignLock(this.#deps, this.name, this.owner, {
      tracked: () => this.#tracked,
      retry: () => this.#retry.schedule(),
    });
    if (read === undefined) return false;
    this.#verifiedRv = rv;
    this.#lock = read === 'data' ? undefined : read;
    if (read === 'data') return false;
    this.#deps.holders.watch(this.owner.name);
    return true;
  }

  #releaseTarget(): ReleaseTarget {
    const { ctx, kind, client } = this.#deps;
    // the version read live and found to be a lock
    const lock = this.#lock as LockObject;
    const uid = lock.metadata?.uid as string;
    const resourceVersion = lock.metadata?.resourceVersion as string;
    return {
      kind: kind.kind,
      name: this.name,
      holderPod: { name: this.owner.name, uid: this.owner.uid },
      holderFields: { holder: this.owner.name, holderUid: this.owner.uid },
      version: `${uid}/${resourceVersion}`,
      tracker: this,
      isCurrent: () => this.#tracked,
      write: (opts) => kind.delete(client, ctx.ns, this.name, { uid, resourceVersion }, opts),
      released: () => this.#deps.forget(this.name),
    };
  }
}
