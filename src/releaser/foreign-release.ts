/**
 * The release of another pod's lock once R0, R2 or R3 holds
 * (docs/design.md#how-a-release-is-written): observe mode read live from the
 * own pod right before, then the lock kind's write of exactly the version
 * read (a delete guarded by its uid and resourceVersion, or a Lease's
 * leaderless record over its resourceVersion), told by an Event on both pods.
 * One writer for every kind, so a release is logged, counted and told the
 * same way whichever rule found it.
 */

import type { KubeClient, RequestOptions } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { backgroundRequest, type ContextWithoutClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import { lockId, type ReleasedKind } from './lock-kinds.ts';
import { observeMode } from './rules.ts';

/** A lock of another pod found releasable, and how its kind is written. */
export interface ReleaseTarget {
  readonly kind: ReleasedKind;
  readonly name: string;
  /** The pod the rule found finished or gone: the Events go to it and to this pod. */
  readonly holderPod: { readonly name: string; readonly uid: string };
  /** How log lines name the holder (its owner reference, or the identity it holds the Lease as). */
  readonly holderFields: Readonly<Record<string, unknown>>;
  /** The version read live (uid/resourceVersion); observe mode reports each once per `tracker`. */
  readonly version: string;
  /** The same for every release of one tracked lock. */
  readonly tracker: object;
  /** Whether the lock is still tracked for this holder (not forgotten, not replaced by a new holder's). */
  isCurrent(): boolean;
  /** The write of exactly the version read; a change since is a 409. */
  write(opts: RequestOptions): Promise<unknown>;
  /** The write succeeded: the lock is tracked no more, before the Events tell of it. */
  released?(): void;
}

/** `retry` when the release could not be done and must be tried again later. */
export type ReleaseOutcome = 'retry' | 'done';

export class ForeignRelease {
  readonly #ctx: ContextWithoutClient;
  readonly #client: Pick<KubeClient, 'getPod'>;
  readonly #events: EventRecorder;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  readonly #observe: boolean;
  /** Observe mode: the lock version already reported per tracked lock, so events are not repeated. */
  readonly #observed = new WeakMap<object, string>();

  constructor(ctx: ContextWithoutClient, client: Pick<KubeClient, 'getPod'>, events: EventRecorder, settings: { observe: boolean }) {
    this.#ctx = ctx;
    this.#client = client;
    this.#events = events;
    this.#observe = settings.observe;
  }

  async release(t: ReleaseTarget, rule: string, why: string): Promise<ReleaseOutcome> {
    const ctx = this.#ctx;
    const observe = await this.#observeNow(t);
    if (observe === 'retry') return 'retry';
    if (observe === undefined || ctx.signal.aborted || !t.isCurrent()) return 'done';
    const { kind, name } = t;
    const fields = { rule, lock: lockId(t, name), ...t.holderFields, observe };
    const target = { name: t.holderPod.name, namespace: ctx.ns, uid: t.holderPod.uid };
    if (observe) {
      const key = `${t.version}/${rule}`;
      if (this.#observed.get(t.tracker) === key) return 'done';
      this.#observed.set(t.tracker, key);
      ctx.log.info(fields, `would release lock ${name} (${rule}: ${why}); observe mode, releasing nothing`);
      ctx.metrics.release(rule, kind, 'observed');
      await this.#events.emitOnBoth(target, 'LeaderLockWouldRelease', `Would release leader lock ${kind} ${name} (${rule}: ${why}); observe mode`);
      return 'done';
    }
    try {
      await t.write(backgroundRequest(ctx));
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) {
        // someone wrote it since the read: the watch brings what they wrote
        ctx.log.info({ ...fields, err }, `lock ${name} already released or changed by someone else; nothing to do`);
        ctx.metrics.release(rule, kind, 'moved');
        return 'done';
      }
      if (ctx.signal.aborted) return 'done';
      ctx.log.warn({ ...fields, err }, `releasing lock ${name} failed; will retry`);
      ctx.metrics.release(rule, kind, 'failed');
      return 'retry';
    }
    ctx.log.info(fields, `released lock ${name} (${rule}: ${why})`);
    ctx.metrics.release(rule, kind, 'released');
    t.released?.();
    await this.#events.emitOnBoth(target, 'LeaderLockReleased', `Released leader lock ${kind} ${name} (${rule}: ${why})`);
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
        ctx.log.warn({ err, lock: lockId(t, t.name) }, 'cannot read own pod before releasing a lock; will retry');
        return 'retry';
      }
      return undefined;
    }
  }
}
