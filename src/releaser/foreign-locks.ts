/**
 * The ConfigMap locks of other pods, and their holders: R0, R2 and R3. Each
 * lock is tracked from the watch's metadata, read in full once per version
 * (only a ConfigMap without data is a lock), and its holder read live on
 * every change of the lock or of the holder pod, one evaluation at a time per
 * lock. A release deletes exactly the version read, guarded by preconditions.
 */
import { backoffDelay } from '../kube/backoff.ts';
import { paths } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import type { ConfigMap, OwnerReference, Pod } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, backgroundRequest, type HookContext } from './context.ts';
import type { EventRecorder } from './events.ts';
import type { ForeignLockSink } from './own-locks.ts';
import { decideHolderRelease, type HolderDecision, type HolderLookup, lockOwner, notFound, observeMode } from './rules.ts';
import { KeyedSerializer } from './serializer.ts';

/** A ConfigMap lock held by another pod, and what we last learned of its holder. */
export interface Tracker {
  readonly name: string;
  /** Metadata only, as the watch delivered it. */
  cm: ConfigMap;
  readonly owner: OwnerReference;
  /**
   * The full object read live at `verifiedRv` when it is a lock (no data):
   * its preconditions guard the delete. Unset after a read that found data —
   * the pod's own configuration, never released, never reported.
   */
  lock?: ConfigMap;
  /** The metadata resourceVersion the last live read was made for. */
  verifiedRv?: string;
  /** When this pod started waiting for this holder (clock ms). */
  readonly since: number;
  failures: number;
  retry?: NodeJS.Timeout;
  holder?: HolderLookup;
  decision?: HolderDecision;
  /** Observe mode: the lock version already reported, so events are not repeated. */
  observedKey?: string;
}

export class ForeignLocks implements ForeignLockSink {
  readonly #ctx: HookContext;
  readonly #events: EventRecorder;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  readonly #observe: boolean;
  /** A live read found the lock held by another owner than the one tracked: sort it again. */
  readonly #reclassify: (cm: ConfigMap) => void;
  readonly #trackers = new Map<string, Tracker>();
  readonly #holderWatches = new Map<string, Watcher>();
  readonly #serial = new KeyedSerializer<Tracker>();

  constructor(ctx: HookContext, events: EventRecorder, settings: { observe: boolean; reclassify: (cm: ConfigMap) => void }) {
    this.#ctx = ctx;
    this.#events = events;
    this.#observe = settings.observe;
    this.#reclassify = settings.reclassify;
  }

  track(cm: ConfigMap, owner: OwnerReference): void {
    const name = cm.metadata?.name as string;
    let t = this.#trackers.get(name);
    if (!t || t.owner.uid !== owner.uid) {
      if (t) this.forget(name);
      t = { name, cm, owner, since: this.#ctx.clock.now(), failures: 0 };
      this.#trackers.set(name, t);
    } else {
      t.cm = cm;
    }
    void this.evaluate(t);
  }

  forget(name: string): void {
    const t = this.#trackers.get(name);
    if (!t) return;
    this.#trackers.delete(name);
    if (t.retry) clearTimeout(t.retry);
    this.#ctx.metrics.clearWaiting(name);
    if (!this.tracked().some((o) => o.owner.name === t.owner.name)) {
      this.#holderWatches.get(t.owner.name)?.stop();
      this.#holderWatches.delete(t.owner.name);
    }
  }

  names(): string[] {
    return [...this.#trackers.keys()];
  }

  tracked(): Tracker[] {
    return [...this.#trackers.values()];
  }

  /** Whether `t` is still the tracker of its lock (not forgotten, not replaced by a new holder's). */
  isCurrent(t: Tracker): boolean {
    return this.#trackers.get(t.name) === t;
  }

  stop(): void {
    for (const w of this.#holderWatches.values()) w.stop();
    for (const t of this.#trackers.values()) if (t.retry) clearTimeout(t.retry);
  }

  /** Settles when the holder watches have ended after stop(). */
  get done(): Promise<unknown> {
    return Promise.all([...this.#holderWatches.values()].map((w) => w.done));
  }

  /**
   * Reads the holder live and applies R2/R3 (R0 when the holder has our
   * name). A watch event only triggers this; the decision always rests on
   * the live read.
   */
  evaluate(t: Tracker): Promise<void> {
    return this.#serial.run(t, () => this.#evaluateOnce(t));
  }

  /** One evaluation; false when it stopped early (lock gone or replaced, or a retry scheduled). */
  async #evaluateOnce(t: Tracker): Promise<boolean> {
    const ctx = this.#ctx;
    if (ctx.signal.aborted || !this.isCurrent(t)) return false;
    if (!(await this.#verify(t))) return false;
    let holder: HolderLookup;
    try {
      holder = await ctx.client.getPod(ctx.ns, t.owner.name, backgroundRequest(ctx));
    } catch (err) {
      if (isNotFound(err)) holder = notFound;
      else {
        if (!ctx.signal.aborted) {
          ctx.log.warn({ err, lock: t.name }, 'cannot read holder pod; will retry');
          this.#scheduleRetry(t);
        }
        return false;
      }
    }
    if (ctx.signal.aborted || !this.isCurrent(t)) return false;
    const decision = decideHolderRelease(holder, t.owner);
    t.holder = holder;
    t.decision = decision;
    if (decision.release) await this.#release(t, t.owner.name === ctx.podName ? 'R0' : decision.rule, decision.message);
    else {
      t.failures = 0;
      // Every event of a lock or its holder that keeps it comes here: build the line only when it is written.
      if (ctx.log.isLevelEnabled('debug')) {
        ctx.log.debug({ lock: `ConfigMap/${t.name}`, holder: t.owner.name, holderState: decision.state }, `holder read live: ${decision.message}; lock kept`);
      }
    }
    return true;
  }

  /**
   * Reads a foreign candidate in full, once per version: only a ConfigMap
   * without data is a lock. True when `t` is a lock of the same holder.
   */
  async #verify(t: Tracker): Promise<boolean> {
    const ctx = this.#ctx;
    const rv = t.cm.metadata?.resourceVersion;
    if (t.verifiedRv === rv) return t.lock !== undefined;
    let full: ConfigMap;
    try {
      full = await ctx.client.getConfigMap(ctx.ns, t.name, backgroundRequest(ctx));
    } catch (err) {
      if (ctx.signal.aborted || !this.isCurrent(t)) return false;
      if (isNotFound(err)) this.forget(t.name);
      else {
        ctx.log.warn({ err, lock: `ConfigMap/${t.name}` }, 'cannot read lock; will retry');
        this.#scheduleRetry(t);
      }
      return false;
    }
    if (ctx.signal.aborted || !this.isCurrent(t)) return false;
    const owner = lockOwner(full);
    if (owner && owner.uid !== t.owner.uid) {
      this.#reclassify(full);
      return false;
    }
    t.verifiedRv = rv;
    if (!owner) {
      t.lock = undefined;
      ctx.metrics.clearWaiting(t.name);
      ctx.log.debug({ lock: `ConfigMap/${t.name}`, holder: t.owner.name }, 'ConfigMap owned by a pod carries data: not a lock, left to garbage collection');
      return false;
    }
    t.lock = full;
    this.#watchHolder(t.owner.name);
    return true;
  }

  /** A holder's status changes without its lock changing: watch the pod too (watch only, by name). */
  #watchHolder(holderName: string): void {
    const ctx = this.#ctx;
    if (this.#holderWatches.has(holderName) || !allowed(ctx, 'pods', 'watch') || ctx.signal.aborted) return;
    const w = startWatch<Pod>(
      {
        client: ctx.client,
        path: paths.pods(ctx.ns),
        fieldSelector: `metadata.name=${holderName}`,
        mode: 'watch',
        what: `holder pod ${holderName}`,
        logger: ctx.log,
      },
      {
        onEvent: () => {
          for (const t of this.#trackers.values()) if (t.owner.name === holderName) void this.evaluate(t);
        },
      },
    );
    this.#holderWatches.set(holderName, w);
  }

  #scheduleRetry(t: Tracker): void {
    if (t.retry) clearTimeout(t.retry);
    t.failures++;
    t.retry = setTimeout(
      () => {
        t.retry = undefined;
        void this.evaluate(t);
      },
      backoffDelay(t.failures, 1_000),
    );
    t.retry.unref();
  }

  /**
   * Observe mode as this pod's annotation says now, read live right before a
   * release (a value read at start would half-honour a change); always with
   * the flag, which the annotation cannot turn off. Undefined when the own
   * pod cannot be read: nothing is released then, and a retry is scheduled.
   */
  async #observeNow(t: Tracker): Promise<boolean | undefined> {
    const ctx = this.#ctx;
    try {
      const pod = await ctx.client.getPod(ctx.ns, ctx.podName, backgroundRequest(ctx));
      return observeMode(pod, this.#observe);
    } catch (err) {
      if (!ctx.signal.aborted && this.isCurrent(t)) {
        ctx.log.warn({ err, lock: `ConfigMap/${t.name}` }, 'cannot read own pod before releasing a lock; will retry');
        this.#scheduleRetry(t);
      }
      return undefined;
    }
  }

  async #release(t: Tracker, rule: string, why: string): Promise<void> {
    const ctx = this.#ctx;
    const { owner } = t;
    // the version read live and found to be a lock; a change since is a 409
    const lock = t.lock as ConfigMap;
    const uid = lock.metadata?.uid as string;
    const resourceVersion = lock.metadata?.resourceVersion as string;
    const observe = await this.#observeNow(t);
    if (observe === undefined || ctx.signal.aborted || !this.isCurrent(t)) return;
    const fields = { rule, lock: `ConfigMap/${t.name}`, holder: owner.name, holderUid: owner.uid, observe };
    const target = { name: owner.name, namespace: ctx.ns, uid: owner.uid };
    if (observe) {
      const key = `${uid}/${resourceVersion}/${rule}`;
      if (t.observedKey === key) return;
      t.observedKey = key;
      ctx.log.info(fields, `would release lock ${t.name} (${rule}: ${why}); observe mode, releasing nothing`);
      ctx.metrics.release(rule, 'ConfigMap', 'observed');
      await this.#events.emitOnBoth(target, 'LeaderLockWouldRelease', `Would release leader lock ConfigMap ${t.name} (${rule}: ${why}); observe mode`);
      return;
    }
    try {
      await ctx.client.deleteConfigMap(ctx.ns, t.name, { uid, resourceVersion }, backgroundRequest(ctx));
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) {
        ctx.log.info({ ...fields, err }, `lock ${t.name} already deleted or changed by someone else; nothing to do`);
        ctx.metrics.release(rule, 'ConfigMap', 'moved');
        return;
      }
      if (ctx.signal.aborted) return;
      ctx.log.warn({ ...fields, err }, `releasing lock ${t.name} failed; will retry`);
      ctx.metrics.release(rule, 'ConfigMap', 'failed');
      this.#scheduleRetry(t);
      return;
    }
    ctx.log.info(fields, `released lock ${t.name} (${rule}: ${why})`);
    ctx.metrics.release(rule, 'ConfigMap', 'released');
    this.forget(t.name);
    await this.#events.emitOnBoth(target, 'LeaderLockReleased', `Released leader lock ConfigMap ${t.name} (${rule}: ${why})`);
  }
}
