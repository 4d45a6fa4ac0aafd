/**
 * Who leads one soak namespace, second by second, read off its recording
 * (test/support/recorder.ts) as it grows: the pod the lock names, counted as
 * leading only while it writes heartbeats, and how long the lock has named a
 * pod that can never run again. kopf-operator's "lock" is its peering, whose
 * top-priority entry names the pod that runs (test/support/kopf-peering.ts);
 * an entry of a pod that can never run keeps every standby paused as a lock
 * would. The recording only grows; each look reads the events that arrived
 * since the last, so a look costs the same after two hours as after two
 * minutes.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { lockOf } from '../support/failover-trial.ts';
import { type KopfPeeringObject, peeringAsLease, topPeer } from '../support/kopf-peering.ts';
import { kopfPeering } from '../support/operators.ts';
import type { Observed, Recording } from '../support/recorder.ts';
import { heartbeatOf, type LockHistory, type LockUnderTest } from '../support/split-brain.ts';
import type { SoakOperator } from './soak-operators.ts';

/**
 * A leader that has not written a heartbeat for this long is not leading: six
 * of the soak's heartbeat intervals (HEARTBEAT_INTERVAL_MS). A number of its
 * own, as the reports of earlier records tell it.
 */
export const HEARTBEAT_SILENCE_MS = 3_000;

/**
 * How the soak reads one operator's leadership off its recording: the writes
 * of the object that names its leader, whom each revision names, and those
 * writes as the split-brain checker reads them.
 */
export interface SoakLock {
  /** What the split-brain checker follows: `name` picks the object among `writes`, `heartbeat` the ConfigMap its leader writes. */
  lock: LockUnderTest;
  /** Every recorded write of the object's kind: a list that only grows. */
  writes: (recording: Recording) => readonly Observed<unknown>[];
  /** Whom a revision names: a pod by its name, or with `byUid` by its UID; undefined for nobody. */
  holderOf: (object: unknown) => string | undefined;
  byUid?: true;
  history: (recording: Recording) => LockHistory;
}

export function soakLockOf(operator: SoakOperator): SoakLock {
  if (operator === 'kopf-operator') {
    return {
      lock: kopfPeering,
      writes: (recording) => recording.kopfPeerings,
      holderOf: (object) => topPeer(object as KopfPeeringObject),
      byUid: true,
      history: (recording) => ({ lock: kopfPeering, configMaps: recording.configMaps, leases: recording.kopfPeerings.map(peeringAsLease) }),
    };
  }
  const lock = lockOf(operator);
  return {
    lock,
    writes: (recording) => (lock.kind === 'ConfigMap' ? recording.configMaps : recording.leases),
    holderOf: (object) => lock.holderOf(object),
    history: (recording) => ({ lock, configMaps: recording.configMaps, leases: recording.leases }),
  };
}

/**
 * How long a lock may name a pod that can never run before the soak counts it
 * as left held: longer than the garbage collector's delete of a ConfigMap lock
 * after its pod is gone and than a 15 s Lease running out and being taken; a
 * kopf entry left behind expires at its last keep-alive + 60 s, before its pod
 * has been gone that long, and the standby then removes it.
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
  readonly #lock: SoakLock;
  #lockSeen = 0;
  #beatsSeen = 0;
  #podsSeen = 0;
  /** As the lock names it: a pod name, or a UID (`byUid`). */
  #holder: string | undefined;
  /** Pod names by UID, of every pod the recording saw: a UID the lock names is looked up at each look, as its pod may be seen later than the entry. */
  readonly #podByUid = new Map<string, string>();
  /** The newest heartbeat time per writer pod. */
  readonly #lastBeat = new Map<string, number>();
  /** Since when the current holder could never run. */
  #deadSince: number | undefined;
  #counted: string | undefined;

  constructor(recording: Recording, lock: SoakLock) {
    this.#recording = recording;
    this.#lock = lock;
  }

  look(now = Date.now()): LeaderLook {
    // the lock's kind's list, read from where the last look stopped (lock.events would filter all of it every second)
    const lockList = this.#lock.writes(this.#recording);
    for (; this.#lockSeen < lockList.length; this.#lockSeen++) {
      const event = lockList[this.#lockSeen]!;
      if ((event.object as { metadata?: { name?: string } }).metadata?.name !== this.#lock.lock.name) continue;
      this.#holder = event.type === 'DELETED' ? undefined : this.#lock.holderOf(event.object);
    }
    if (this.#lock.byUid) {
      const pods = this.#recording.pods;
      for (; this.#podsSeen < pods.length; this.#podsSeen++) {
        const { uid, name } = pods[this.#podsSeen]!.object.metadata ?? {};
        if (uid && name) this.#podByUid.set(uid, name);
      }
    }
    const configMaps = this.#recording.configMaps;
    for (; this.#beatsSeen < configMaps.length; this.#beatsSeen++) {
      const event = configMaps[this.#beatsSeen]!;
      if (event.type === 'DELETED' || event.object.metadata?.name !== this.#lock.lock.heartbeat) continue;
      const beat = heartbeatOf(event.object);
      if (beat) this.#lastBeat.set(beat.pod, Math.max(event.at, this.#lastBeat.get(beat.pod) ?? 0));
    }
    // a UID no pod was seen with yet stays a UID: no pod of that name, so it counts as one that can never run
    const holder = this.#lock.byUid && this.#holder !== undefined ? (this.#podByUid.get(this.#holder) ?? this.#holder) : this.#holder;
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
