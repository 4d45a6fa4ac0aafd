/**
 * The release of another pod's lock once R0, R2 or R3 holds
 * (docs/design.md#how-a-release-is-written): observe mode read live from the
 * own pod right before, then a delete of exactly the version read, guarded
 * by its uid and resourceVersion, told by an Event on both pods.
 */

import { isConflict, isNotFound } from '../kube/errors.ts';
import type { OwnerReference } from '../kube/types.ts';
import { backgroundRequest, type ContextWithoutClient, type ForeignLockClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import { type LockKind, type LockObject, lockId } from './lock-kinds.ts';
import { observeMode } from './rules.ts';

/** A lock of another pod found releasable. */
export interface ReleaseTarget {
  readonly name: string;
  readonly owner: OwnerReference;
  /** The version read live and found to be a lock; a change since is a 409. */
  readonly lock: LockObject;
  /** The same for every release of one tracked lock: observe mode reports each version once per lock. */
  readonly identity: object;
  /** Whether the lock is still tracked for this holder (not forgotten, not replaced by a new holder's). */
  isCurrent(): boolean;
}

/** `retry` when the release could not be done and must be tried again later. */
export type ReleaseOutcome = 'retry' | 'done';

export class ForeignRelease {
  readonly #ctx: ContextWithoutClient;
  readonly #client: ForeignLockClient;
  readonly #kind: LockKind;
  readonly #events: EventRecorder;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  readonly #observe: boolean;
  /** Observe mode: the lock version already reported per tracked lock, so events are not repeated. */
  readonly #observed = new WeakMap<object, string>();
  /** The lock was released: it is tracked no more, before the Events tell of it. */
  readonly #forget: (name: string) => void;

  constructor(
    ctx: ContextWithoutClient,
    client: ForeignLockClient,
    events: EventRecorder,
    settings: { kind: LockKind; observe: boolean; forget: (name: string) => void },
  ) {
    this.#ctx = ctx;
    this.#client = client;
    this.#kind = settings.kind;
    this.#events = events;
    this.#observe = settings.observe;
    this.#forget = settings.forget;
  }

  async release(t: ReleaseTarget, rule: string, why: string): Promise<ReleaseOutcome> {
    const ctx = this.#ctx;
    const { owner } = t;
    const uid = t.lock.metadata?.uid as string;
    const resourceVersion = t.lock.metadata?.resourceVersion as string;
    const observe = await this.#observeNow(t);
    if (observe === 'retry') return 'retry';
    if (observe === undefined || ctx.signal.aborted || !t.isCurrent()) return 'done';
    const kind = this.#kind.kind;
    const fields = { rule, lock: lockId(this.#kind, t.name), holder: owner.name, holderUid: owner.uid, observe };
    const target = { name: owner.name, namespace: ctx.ns, uid: owner.uid };
    if (observe) {
      const key = `${uid}/${resourceVersion}/${rule}`;
      if (this.#observed.get(t.identity) === key) return 'done';
      this.#observed.set(t.identity, key);
      ctx.log.info(fields, `would release lock ${t.name} (${rule}: ${why}); observe mode, releasing nothing`);
      ctx.metrics.release(rule, kind, 'observed');
      await this.#events.emitOnBoth(target, 'LeaderLockWouldRelease', `Would release leader lock ${kind} ${t.name} (${rule}: ${why}); observe mode`);
      return 'done';
    }
    try {
      await this.#kind.delete(this.#client, ctx.ns, t.name, { uid, resourceVersion }, backgroundRequest(ctx));
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) {
        ctx.log.info({ ...fields, err }, `lock ${t.name} already deleted or changed by someone else; nothing to do`);
        ctx.metrics.release(rule, kind, 'moved');
        return 'done';
      }
      if (ctx.signal.aborted) return 'done';
      ctx.log.warn({ ...fields, err }, `releasing lock ${t.name} failed; will retry`);
      ctx.metrics.release(rule, kind, 'failed');
      return 'retry';
    }
    ctx.log.info(fields, `released lock ${t.name} (${rule}: ${why})`);
    ctx.metrics.release(rule, kind, 'released');
    this.#forget(t.name);
    await this.#events.emitOnBoth(target, 'LeaderLockReleased', `Released leader lock ${kind} ${t.name} (${rule}: ${why})`);
    return 'done';
  }

  /**
   * Observe mode as this pod's annotation says now, read live right before a
   * release (a value read at start would half-honour a change); always with
   * the flag, which the annotation cannot turn off. Undefined when the own
   * pod cannot be read: nothing is released then, and `retry` while the
   * lock is still tracked.
   */
  async #observeNow(t: ReleaseTarget): Promise<boolean | 'retry' | undefined> {
    const ctx = this.#ctx;
    try {
      const pod = await this.#client.getPod(ctx.ns, ctx.podName, backgroundRequest(ctx));
      return observeMode(pod, this.#observe);
    } catch (err) {
      if (!ctx.signal.aborted && t.isCurrent()) {
        ctx.log.warn({ err, lock: lockId(this.#kind, t.name) }, 'cannot read own pod before releasing a lock; will retry');
        return 'retry';
      }
      return undefined;
    }
  }
}
