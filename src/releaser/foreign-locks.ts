/**
 * The locks of other pods, of one kind (ConfigMaps, or Leases owned by a
 * pod): R0, R2 and R3 (docs/design.md#the-release-rules). A handler of that
 * kind's store of lock candidates that keeps one ForeignLock per candidate
 * of another pod, and has each holder watched while one of its locks is tracked.
 */
import type { OwnerReference } from '../kube/types.ts';
import type { ContextWithoutClient, ForeignLockClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import { ForeignLock, type ForeignLockDeps } from './foreign-lock.ts';
import type { ForeignLockView } from './foreign-lock-view.ts';
import { ForeignRelease } from './foreign-release.ts';
import { HolderWatches, type WatchPodByName } from './holder-watches.ts';
import type { LockHandler, LockSource } from './lock-cache.ts';
import { configMapLocks, type LockKind, type LockObject } from './lock-kinds.ts';

export interface ForeignLockSources {
  /** The kind of lock; a ConfigMap when unset. */
  kind?: LockKind;
  client: ForeignLockClient;
  events: EventRecorder;
  cache: LockSource;
  watchPod: WatchPodByName;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  observe: boolean;
}

export class ForeignLocks implements LockHandler {
  readonly #ctx: ContextWithoutClient;
  readonly #deps: ForeignLockDeps;
  readonly #holders: HolderWatches;
  readonly #locks = new Map<string, ForeignLock>();

  constructor(ctx: ContextWithoutClient, sources: ForeignLockSources) {
    this.#ctx = ctx;
    this.#holders = new HolderWatches(ctx, sources.watchPod, (holderName) => {
      for (const lock of this.#locks.values()) if (lock.owner.name === holderName) void lock.evaluate();
    });
    const kind = sources.kind ?? configMapLocks;
    this.#deps = {
      ctx,
      kind,
      client: sources.client,
      cache: sources.cache,
      holders: this.#holders,
      releaser: new ForeignRelease(ctx, sources.client, sources.events, { observe: sources.observe }),
      forget: (name) => this.remove(name),
    };
    sources.cache.subscribe(this);
  }

  upsert(cm: LockObject, owner: OwnerReference): void {
    const name = cm.metadata?.name as string;
    if (owner.uid === this.#ctx.podUid) {
      this.remove(name);
      return;
    }
    let lock = this.#locks.get(name);
    if (!lock || lock.owner.uid !== owner.uid) {
      if (lock) this.remove(name);
      lock = new ForeignLock(this.#deps, cm, owner);
      this.#locks.set(name, lock);
    } else {
      lock.update(cm);
      // A holder may renew its Lease every few seconds: a new version of the
      // same holder's lock says nothing of the holder, whose own watch (or the
      // wait report) triggers the next evaluation, which reads the lock again.
      if (this.#deps.kind.renewable) return;
    }
    void lock.evaluate();
  }

  remove(name: string): void {
    const lock = this.#locks.get(name);
    if (!lock) return;
    this.#locks.delete(name);
    lock.untrack();
    this.#ctx.metrics.clearWaiting(name);
    if (![...this.#locks.values()].some((other) => other.owner.name === lock.owner.name)) this.#holders.unwatch(lock.owner.name);
  }

  tracked(): ForeignLockView[] {
    return [...this.#locks.values()];
  }

  /** Whether `view` is still of the lock tracked under its name (not forgotten, not replaced by a new holder's). */
  isCurrent(view: ForeignLockView): boolean {
    return this.#locks.get(view.name) === view;
  }

  /**
   * Reads the holder live and applies R2/R3 (R0 when the holder has our
   * name), as a watch event would; may release.
   */
  evaluate(view: ForeignLockView): Promise<void> {
    const lock = this.#locks.get(view.name);
    return lock !== undefined && lock === view ? lock.evaluate() : Promise.resolve();
  }

  stop(): void {
    this.#holders.stop();
    for (const lock of this.#locks.values()) lock.untrack();
  }

  /** Settles when the holder watches have ended after stop(). */
  get done(): Promise<unknown> {
    return this.#holders.done;
  }
}

/** The foreign locks of both kinds as one, for the wait reports. */
export function bothKinds(configMaps: ForeignLocks, leases: ForeignLocks): Pick<ForeignLocks, 'tracked' | 'evaluate' | 'isCurrent'> {
  const of = (view: ForeignLockView) => (view.kind === 'Lease' ? leases : configMaps);
  return {
    tracked: () => [...configMaps.tracked(), ...leases.tracked()],
    evaluate: (view) => of(view).evaluate(view),
    isCurrent: (view) => of(view).isCurrent(view),
  };
}
