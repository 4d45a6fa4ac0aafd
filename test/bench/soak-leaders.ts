/**
 * Who leads one soak namespace, second by second, read off its recording
 * (test/support/recorder.ts) as it grows: the pod the lock names, counted as
 * leading only while it writes heartbeats, and how long the lock has named a
 * pod that can never run again. The recording only grows; each look reads the
 * events that arrived since the last, so a look costs the same after two hours
 * as after two minutes.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { LeaderLock } from '../support/operators.ts';
import type { Observed, Recording } from '../support/recorder.ts';
import { heartbeatOf } from '../support/split-brain.ts';

/** A leader that has not written a heartbeat for this long is not leading (the operators write one every 500 ms in the soak). */
export const HEARTBEAT_SILENCE_MS = 3_000;

/**
 * How long a lock may name a pod that can never run before the soak counts it
 * as left held: longer than the garbage collector's delete of a ConfigMap lock
 * after its pod is gone and than a 15 s Lease running out and being taken.
 */
export const DEAD_HOLDER_GRACE_MS = 60_000;

/** A pod that is gone, or has ended (Failed, Succeeded): it can never renew a lock again. */
export function canNeverRun(pod: V1Pod | undefined): boolean {
  return pod === undefined || pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded';
}

export interface LeaderLook {
  /** The pod leading: named by the lock and writing heartbeats; undefined when nobody is. */
  leader: string | undefined;
  /** The pod the lock names, leading or not. */
  holder: string | undefined;
  /** A holder that can never run and has held the lock past DEAD_HOLDER_GRACE_MS, newly so at this look. */
  newlyLeftHeld?: string;
}

export class LeaderTracker {
  readonly #recording: Recording;
  readonly #lock: LeaderLock<unknown>;
  #lockSeen = 0;
  #beatsSeen = 0;
  #holder: string | undefined;
  /** The newest heartbeat time per writer pod. */
  readonly #lastBeat = new Map<string, number>();
  /** Since when the current holder could never run. */
  #deadSince: number | undefined;
  #counted: string | undefined;

  constructor(recording: Recording, lock: LeaderLock<unknown>) {
    this.#recording = recording;
    this.#lock = lock;
  }

  look(now = Date.now()): LeaderLook {
    // the lock's kind's list, read from where the last look stopped (lock.events would filter all of it every second)
    const lockList: readonly Observed<unknown>[] = this.#lock.kind === 'ConfigMap' ? this.#recording.configMaps : this.#recording.leases;
    for (; this.#lockSeen < lockList.length; this.#lockSeen++) {
      const event = lockList[this.#lockSeen]!;
      if ((event.object as { metadata?: { name?: string } }).metadata?.name !== this.#lock.name) continue;
      this.#holder = event.type === 'DELETED' ? undefined : this.#lock.holderOf(event.object);
    }
    const configMaps = this.#recording.configMaps;
    for (; this.#beatsSeen < configMaps.length; this.#beatsSeen++) {
      const event = configMaps[this.#beatsSeen]!;
      if (event.type === 'DELETED' || event.object.metadata?.name !== this.#lock.heartbeat) continue;
      const beat = heartbeatOf(event.object);
      if (beat) this.#lastBeat.set(beat.pod, Math.max(event.at, this.#lastBeat.get(beat.pod) ?? 0));
    }
    const holder = this.#holder;
    const beating = holder !== undefined && now - (this.#lastBeat.get(holder) ?? Number.NEGATIVE_INFINITY) <= HEARTBEAT_SILENCE_MS;
    const look: LeaderLook = { leader: beating ? holder : undefined, holder };
    if (holder === undefined || !canNeverRun(this.#recording.podNow.get(holder))) {
      this.#deadSince = undefined;
      return look;
    }
    this.#deadSince ??= now;
    if (now - this.#deadSince >= DEAD_HOLDER_GRACE_MS && this.#counted !== holder) {
      this.#counted = holder;
      look.newlyLeftHeld = holder;
    }
    return look;
  }
}
