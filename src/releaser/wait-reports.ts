/**
 * The waiting side: a standby that cannot become leader says why, where an
 * administrator looks (docs/design.md#what-is-never-released: an Event on the waiting pod and a log line
 * that name the holder, its state, how long the wait lasts and the safe
 * remedies). Every interval it re-reads each holder live, which may release.
 */
import type { Pod } from '../kube/types.ts';
import type { ContextWithoutClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import type { ForeignLockView } from './foreign-lock-view.ts';
import type { ForeignLocks } from './foreign-locks.ts';
import type { OwnLocks } from './own-locks.ts';
import { notFound, sameWorkload } from './rules.ts';

export class WaitReporter {
  readonly #ctx: ContextWithoutClient;
  readonly #events: EventRecorder;
  readonly #foreign: Pick<ForeignLocks, 'tracked' | 'evaluate' | 'isCurrent'>;
  readonly #own: Pick<OwnLocks, 'lockName' | 'holdsLock'>;
  readonly #intervalMs: number;
  /** The holder state last reported per lock tracker, so a wait is reported when it changes, not every interval. */
  readonly #reported = new WeakMap<ForeignLockView, string>();
  #ownPod: Pod | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    ctx: ContextWithoutClient,
    events: EventRecorder,
    sources: { foreign: Pick<ForeignLocks, 'tracked' | 'evaluate' | 'isCurrent'>; own: Pick<OwnLocks, 'lockName' | 'holdsLock'> },
    intervalMs: number,
  ) {
    this.#ctx = ctx;
    this.#events = events;
    this.#foreign = sources.foreign;
    this.#own = sources.own;
    this.#intervalMs = intervalMs;
  }

  /** Reports every interval from now on, as a standby of `ownPod`'s workload. */
  start(ownPod: Pod): void {
    this.#ownPod = ownPod;
    this.#timer = setInterval(() => {
      this.report().catch((err: unknown) => this.#ctx.log.error({ err }, 'wait report failed'));
    }, this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  /**
   * Reports a standby's wait when it is a problem or changes: the holder not
   * running, not Ready, terminal but not releasable, or back to Running after
   * one of these. A healthy Running leader holding its lock is the normal case
   * and gives one log line, no Event: an Event every interval would be noise.
   */
  async report(): Promise<void> {
    const { log, clock, metrics, signal, self } = this.#ctx;
    for (const t of this.#foreign.tracked()) {
      if (signal.aborted) return;
      await this.#foreign.evaluate(t); // refresh from a live read; may release
      const d = t.decision;
      if (!this.#foreign.isCurrent(t) || !d || d.release || !t.isLock) continue;
      const waitedMs = clock.now() - t.since;
      metrics.waiting(t.name, t.owner.name, d.state, waitedMs / 1000);
      if (!this.#isStandbyFor(t) || waitedMs < this.#intervalMs / 2 || d.state === this.#reported.get(t)) continue;
      const previous = this.#reported.get(t);
      this.#reported.set(t, d.state);
      const node = t.holder && t.holder !== notFound ? t.holder.spec?.nodeName : undefined;
      const fields = {
        lock: `${t.kind}/${t.name}`,
        holder: t.owner.name,
        holderState: d.state,
        previousState: previous,
        waitedSeconds: Math.round(waitedMs / 1000),
        node,
      };
      if (d.state === 'running') {
        log.info(fields, `leader lock ${t.kind} ${t.name} is held by pod ${t.owner.name}, which is Running and Ready: waiting`);
        if (previous !== undefined) {
          await this.#events.emit(
            self,
            'LeaderLockHeld',
            'Normal',
            `Leader lock ${t.kind} ${t.name}: holder pod ${t.owner.name} is Running and Ready again (was ${previous}).`,
          );
        }
        continue;
      }
      const message =
        `Leader lock ${t.kind} ${t.name} is held by pod ${t.owner.name} (${d.state}): ${d.message}. Waiting ${formatDuration(waitedMs)}. ` +
        'It is freed automatically once that pod is deleted or has finished. Safe remedies: delete that pod' +
        (node ? `; only if node ${node} is known to be down, taint it node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` : '') +
        '. Restarting this pod does not help.';
      log.warn(fields, message);
      await this.#events.emit(self, 'LeaderLockHeld', 'Warning', message);
    }
  }

  /** Whether this pod waits for the lock: pinned to it, or (discovering) holds none and runs the same workload as the holder. */
  #isStandbyFor(t: ForeignLockView): boolean {
    const lockName = this.#own.lockName;
    if (lockName) return t.kind === 'ConfigMap' && t.name === lockName;
    if (this.#own.holdsLock || !this.#ownPod || !t.holder || t.holder === notFound) return false;
    return sameWorkload(this.#ownPod, t.holder);
  }
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  return `${Math.floor(m / 60)}h${m % 60 ? `${m % 60}m` : ''}`;
}
