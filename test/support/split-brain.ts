/**
 * The split-brain checker every recorded failover passes through: from the
 * watched history of a leader lock and of the heartbeat ConfigMap its leader
 * writes (test/operators), it finds every moment two operator processes acted
 * as leader.
 *
 * A heartbeat names its writer three ways (test/operators/internal/opshell):
 * the pod's name and UID, a process id drawn at process start, and the lock
 * identity the process holds the lock as (the owner pod's UID on
 * operator-lib's ConfigMap, controller-runtime's `hostname_uuid` on a Lease,
 * the pod's name on the Lease of client-go-operator).
 * Pod names alone are not enough: a StatefulSet reuses them, and a restarted
 * container is a new process in the same pod. Ordered by resourceVersion (one
 * etcd: one counter for every write), the history must show
 * - every heartbeat carrying all three, consistent with each other;
 * - every heartbeat written while the lock, as of the latest revision
 *   before it, names the identity the heartbeat claims. For a ConfigMap lock
 *   and a Lease held as the pod's name that identity is a pod, so processes
 *   of one pod are told apart by the next rule alone;
 * - no interleaving: once another process has written, a process never
 *   writes again;
 * - one process per lock identity that names a process (`hostname_uuid`),
 *   and per process a growing sequence;
 * - no stretch of history unseen: an object the recorder saw only in a list
 *   (at its start, or after 410 Gone) may have been written before unseen,
 *   so nothing there is proven.
 *
 * Pure: no cluster, no clock. test/support/recording.ts runs it on every
 * recording; test/tooling/split-brain.test.ts runs it on the recorded
 * interleavings of test/testdata/split-brain/, which use the format
 * `toRecordedHistory` writes, so that a failing recording becomes a fixture.
 */
import type { V1ConfigMap, V1Lease } from '@kubernetes/client-node';

/** One write to a watched object, as the recorder saw it. */
export interface ObservedWrite<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: T;
  /** The object's resourceVersion at this write (for a relisted deletion: the list's). */
  rv: bigint;
  /** Seen in a list (the watch's first, or one after 410 Gone), not as a watched write: writes since the object's previous event may be unseen. */
  relisted?: boolean;
}

/** The lock of an operator under test and the ConfigMap its leader writes heartbeats to. */
export interface LockUnderTest {
  kind: 'ConfigMap' | 'Lease';
  name: string;
  heartbeat: string;
  /**
   * Whom a Lease's holderIdentity names: one process (controller-runtime's
   * `hostname_uuid`, drawn at every start; the default), or the pod (a
   * client-go LeaderElector given the pod's name), which every process of the
   * pod shares, as they share a ConfigMap lock's owner UID; or the pod's UID
   * (a kopf peering entry under POD_ID from metadata.uid), shared the same way.
   */
  leaseIdentity?: 'process' | 'pod' | 'uid';
}

/** What the checker reads: every recorded write of the namespace's ConfigMaps and Leases (others than the lock's and the heartbeat's are ignored). */
export interface LockHistory {
  lock: LockUnderTest;
  configMaps: readonly ObservedWrite<V1ConfigMap>[];
  leases: readonly ObservedWrite<V1Lease>[];
}

/** One heartbeat as its writer wrote it; the identity fields are undefined when absent (a writer that predates them). */
export interface HeartbeatData {
  /** The writer's pod name (`holder`, the heartbeat's first field). */
  pod: string;
  seq: number;
  /** The writer's own time of the write, RFC 3339. */
  time: string;
  podUID?: string;
  processID?: string;
  lockIdentity?: string;
}

/** The heartbeat a ConfigMap revision carries, or undefined when it names no writer. */
export function heartbeatOf(configMap: V1ConfigMap | undefined): HeartbeatData | undefined {
  const data = configMap?.data;
  if (!data?.holder) return undefined;
  return {
    pod: data.holder,
    seq: Number(data.seq),
    time: data.time ?? '',
    podUID: data.podUID || undefined,
    processID: data.processID || undefined,
    lockIdentity: data.lockIdentity || undefined,
  };
}

/** Who a lock revision names as its holder: the identity the holder holds it as, and the pod that is. */
export interface LockHolder {
  identity: string;
  pod: string;
}

/**
 * The holder a lock revision names: operator-lib's ConfigMap by its one Pod
 * ownerReference (its UID), a Lease by holderIdentity (`hostname_uuid`, the
 * hostname being the pod name; or the pod name itself, which has no `_`). Undefined when nobody holds it: a leaderless
 * Lease, or a ConfigMap that names no single pod (operator-lib waits on such
 * a lock forever).
 */
export function lockHolderOf(kind: LockUnderTest['kind'], object: V1ConfigMap | V1Lease | undefined): LockHolder | undefined {
  if (kind === 'ConfigMap') {
    const owners = (object as V1ConfigMap | undefined)?.metadata?.ownerReferences ?? [];
    const [owner] = owners;
    if (owners.length !== 1 || owner?.kind !== 'Pod' || !owner.uid) return undefined;
    return { identity: owner.uid, pod: owner.name };
  }
  const identity = (object as V1Lease | undefined)?.spec?.holderIdentity;
  return identity ? { identity, pod: leaseIdentityPod(identity) } : undefined;
}

/** controller-runtime's identity is `<hostname>_<uuid>`, a pod's hostname its name; a pod name (client-go-operator's identity) has no `_` to cut. */
function leaseIdentityPod(identity: string): string {
  return identity.replace(/_[^_]*$/, '');
}

/** The writer of a heartbeat, as far as it says. */
export interface Writer {
  pod: string;
  podUID?: string;
  processID?: string;
}

export type ViolationKind = 'unidentified' | 'not-holder' | 'interleaved' | 'identity-shared' | 'seq-regressed' | 'unobserved';

export interface Violation {
  kind: ViolationKind;
  /** The offending heartbeats' revisions, first and last (`unobserved`: the bounds of the unseen stretch, 0 when it starts with the recording). */
  firstRv: bigint;
  lastRv: bigint;
  /** Heartbeats in the episode: consecutive ones of one writer with the same fault under one lock state count as one violation. */
  writes: number;
  writer?: Writer;
  /** `interleaved`: the process that wrote in between; `identity-shared`: the first to claim the identity. */
  other?: Writer;
  /** `interleaved`: the revisions of the other process's heartbeats in between, and the writer's own heartbeat before them. */
  otherRvs?: { first: bigint; last: bigint };
  previousRv?: bigint;
  /** `not-holder`: the lock state in force and its revision (undefined before any was seen). */
  holder?: LockHolder;
  lockRv?: bigint;
  /** `unidentified`: what is missing or contradictory; `not-holder`, `identity-shared`: the identity claimed; `seq-regressed`: the two numbers; `unobserved`: the object. */
  detail?: string;
  /** Which processes, which revisions, what it means: one sentence. */
  explanation: string;
}

type Entry = { what: 'lock'; write: ObservedWrite<V1ConfigMap | V1Lease> } | { what: 'heartbeat'; write: ObservedWrite<V1ConfigMap> };

function byRevision(a: Entry, b: Entry): number {
  if (a.write.rv !== b.write.rv) return a.write.rv < b.write.rv ? -1 : 1;
  // A relisted deletion carries the list's revision: the lock's state first.
  return a.what === b.what ? 0 : a.what === 'lock' ? -1 : 1;
}

/**
 * What is wrong with a heartbeat's account of its writer, or undefined: all
 * three identities present, the sequence a positive integer, and the lock
 * identity one this writer can hold (its own pod's UID for a ConfigMap lock,
 * `<its pod name>_...` for a Lease, its pod name for a Lease held as the pod).
 */
function identityFault(lock: LockUnderTest, beat: HeartbeatData): string | undefined {
  const { kind } = lock;
  const missing = (['podUID', 'processID', 'lockIdentity'] as const).filter((field) => !beat[field]);
  if (missing.length > 0) return `carries no ${missing.join(', ')}`;
  if (!Number.isInteger(beat.seq) || beat.seq < 1) return `carries seq ${JSON.stringify(beat.seq)}, not a count from 1`;
  if (kind === 'ConfigMap' && beat.lockIdentity !== beat.podUID) return `claims lock identity ${beat.lockIdentity}, not its own pod's UID ${beat.podUID}`;
  if (kind === 'Lease' && lock.leaseIdentity === 'pod' && beat.lockIdentity !== beat.pod)
    return `claims lock identity ${beat.lockIdentity}, not its pod's name ${beat.pod}`;
  if (kind === 'Lease' && lock.leaseIdentity === 'uid')
    return beat.lockIdentity === beat.podUID ? undefined : `claims lock identity ${beat.lockIdentity}, not its pod's UID ${beat.podUID}`;
  if (kind === 'Lease' && leaseIdentityPod(beat.lockIdentity ?? '') !== beat.pod)
    return `claims lock identity ${beat.lockIdentity}, not one of pod ${beat.pod}`;
  return undefined;
}

/** Every violation in `history`, in the order they began; none for a clean failover. */
export function checkSplitBrain(history: LockHistory): Violation[] {
  const { lock } = history;
  const named =
    (name: string) =>
    (write: ObservedWrite<{ metadata?: { name?: string } }>): boolean =>
      write.object?.metadata?.name === name;
  const lockWrites: readonly ObservedWrite<V1ConfigMap | V1Lease>[] =
    lock.kind === 'ConfigMap' ? history.configMaps.filter(named(lock.name)) : history.leases.filter(named(lock.name));
  const entries: Entry[] = [
    ...lockWrites.map((write) => ({ what: 'lock' as const, write })),
    ...history.configMaps.filter(named(lock.heartbeat)).map((write) => ({ what: 'heartbeat' as const, write })),
  ].sort(byRevision);

  const violations: Violation[] = [];
  const open = new Map<string, Violation>();
  /** Adds a violation, or extends the open episode of the same key by this heartbeat. */
  const report = (key: string, rv: bigint, violation: Omit<Violation, 'firstRv' | 'lastRv' | 'writes' | 'explanation'>): void => {
    const episode = open.get(key);
    if (episode) {
      episode.lastRv = rv;
      episode.writes++;
      return;
    }
    const started: Violation = { ...violation, firstRv: rv, lastRv: rv, writes: 1, explanation: '' };
    open.set(key, started);
    violations.push(started);
  };

  let holder: LockHolder | undefined;
  let lockRv: bigint | undefined;
  const lastRvOf: Record<Entry['what'], bigint | undefined> = { lock: undefined, heartbeat: undefined };
  /** The current run of heartbeats of one process, numbered; processes whose run has ended. */
  let run: { key: string; writer: Writer; firstRv: bigint; lastRv: bigint; number: number } | undefined;
  const ended = new Set<string>();
  const lastSeq = new Map<string, { seq: number; rv: bigint }>();
  const claims = new Map<string, { key: string; writer: Writer }>();

  for (const { what, write } of entries) {
    if (write.relisted) {
      violations.push({
        kind: 'unobserved',
        firstRv: lastRvOf[what] ?? 0n,
        lastRv: write.rv,
        writes: 0,
        detail: what === 'lock' ? `${lock.kind}/${lock.name}` : `ConfigMap/${lock.heartbeat}`,
        explanation: '',
      });
    }
    lastRvOf[what] = write.rv;
    if (what === 'lock') {
      holder = write.type === 'DELETED' ? undefined : lockHolderOf(lock.kind, write.object);
      lockRv = write.rv;
      continue;
    }
    if (write.type === 'DELETED') continue;

    const beat = heartbeatOf(write.object);
    const fault = beat ? identityFault(lock, beat) : 'names no writer (no holder field)';
    if (!beat || fault) {
      // An unidentified writer cannot be placed in a run: it neither ends nor resumes one.
      const pod = beat?.pod ?? '';
      report(`unidentified|${pod}|${fault}|${run?.number}`, write.rv, { kind: 'unidentified', writer: { pod }, detail: fault });
      continue;
    }
    const writer: Writer = { pod: beat.pod, podUID: beat.podUID, processID: beat.processID };
    const key = `${beat.podUID}/${beat.processID}`;

    if (run?.key !== key) {
      if (run) ended.add(run.key);
      const number = (run?.number ?? 0) + 1;
      if (run && ended.has(key)) {
        report(`interleaved|${key}|${number}`, write.rv, {
          kind: 'interleaved',
          writer,
          other: run.writer,
          otherRvs: { first: run.firstRv, last: run.lastRv },
          previousRv: lastSeq.get(key)?.rv,
        });
      }
      run = { key, writer, firstRv: write.rv, lastRv: write.rv, number };
    } else {
      run.lastRv = write.rv;
    }

    const previous = lastSeq.get(key);
    if (previous && beat.seq <= previous.seq) {
      report(`seq-regressed|${key}|${write.rv}`, write.rv, {
        kind: 'seq-regressed',
        writer,
        detail: `from ${previous.seq} (rv ${previous.rv}) to ${beat.seq}`,
      });
    }
    lastSeq.set(key, { seq: beat.seq, rv: write.rv });

    const identity = beat.lockIdentity ?? '';
    // A ConfigMap lock's identity is a pod's UID and a pod-named Lease's the pod's name: every process of the pod shares it.
    if (lock.kind === 'Lease' && lock.leaseIdentity !== 'pod' && lock.leaseIdentity !== 'uid') {
      const claim = claims.get(identity);
      if (!claim) claims.set(identity, { key, writer });
      else if (claim.key !== key)
        report(`identity-shared|${key}|${identity}`, write.rv, { kind: 'identity-shared', writer, other: claim.writer, detail: identity });
    }

    if (holder?.identity !== identity) {
      report(`not-holder|${key}|${lockRv}|${run.number}`, write.rv, { kind: 'not-holder', writer, holder, lockRv, detail: identity });
    }
  }

  const processOf = (identity: string): Writer | undefined => (lock.kind === 'Lease' ? claims.get(identity)?.writer : undefined);
  for (const violation of violations) violation.explanation = explain(violation, lock, processOf);
  return violations;
}

/** What a benchmark's record keeps of a check's violations. */
export interface SplitBrainTally {
  /** Violations but the unobserved: two leaders seen. */
  splitBrain: number;
  /** Stretches of the lock's history a relisted watch could not see: no split brain seen, and no proof of none. */
  unobserved: number;
  /** Where there were any: their kinds, and the checker's sentence for each (which processes, which revisions). */
  splitBrainKinds?: string[];
  splitBrainFindings?: string[];
}

/** The violations of a check as the benchmarks' records keep them. */
export function tallySplitBrain(violations: readonly Violation[]): SplitBrainTally {
  const seen = violations.filter((v) => v.kind !== 'unobserved');
  return {
    splitBrain: seen.length,
    unobserved: violations.length - seen.length,
    ...(seen.length > 0 ? { splitBrainKinds: seen.map((v) => v.kind), splitBrainFindings: seen.map((v) => v.explanation) } : {}),
  };
}

export function describeWriter(writer: Writer): string {
  return writer.processID ? `process ${writer.processID} of pod ${writer.pod} (UID ${writer.podUID})` : `pod ${writer.pod || '(unnamed)'}`;
}

function span(first: bigint, last: bigint): string {
  return first === last ? `rv ${first}` : `rv ${first}–${last}`;
}

function describeHolder(
  lock: LockUnderTest,
  holder: LockHolder | undefined,
  lockRv: bigint | undefined,
  processOf: (identity: string) => Writer | undefined,
): string {
  const what = `${lock.kind}/${lock.name}`;
  if (lockRv === undefined) return `no revision of ${what} had been seen yet`;
  if (!holder) return `${what} at rv ${lockRv} was held by nobody`;
  if (lock.kind === 'ConfigMap') return `${what} at rv ${lockRv} was held by pod ${holder.pod} (UID ${holder.identity})`;
  if (lock.leaseIdentity === 'pod') return `${what} at rv ${lockRv} was held by pod ${holder.pod}`;
  if (lock.leaseIdentity === 'uid') return `${what} at rv ${lockRv} was held by the pod of UID ${holder.identity}`;
  const process = processOf(holder.identity);
  return `${what} at rv ${lockRv} was held by ${holder.identity} (${process ? describeWriter(process) : 'no heartbeat names its process'})`;
}

/** What a holder and a writer of the same pod name mean. */
function samePodNote(lock: LockUnderTest, holder: LockHolder | undefined, writer: Writer | undefined): string {
  if (!holder || holder.pod !== writer?.pod) return '';
  return lock.kind === 'ConfigMap'
    ? ': the same pod name with another UID — a reused name (a StatefulSet pod) or a stale lock'
    : ': another process of the same pod — a restarted container';
}

function explain(v: Violation, lock: LockUnderTest, processOf: (identity: string) => Writer | undefined): string {
  const writer = v.writer ? describeWriter(v.writer) : '';
  const other = v.other ? describeWriter(v.other) : '';
  const at = v.writes > 1 ? `${span(v.firstRv, v.lastRv)} (${v.writes} writes)` : span(v.firstRv, v.lastRv);
  switch (v.kind) {
    case 'unidentified':
      return `heartbeat ${at} by ${writer} ${v.detail}: its writer cannot be told apart from other processes`;
    case 'not-holder':
      return `heartbeat ${at} by ${writer} as lock identity ${v.detail}, while ${describeHolder(lock, v.holder, v.lockRv, processOf)}${samePodNote(lock, v.holder, v.writer)}`;
    case 'interleaved':
      return `${writer} wrote heartbeat ${at} after ${other} had written ${span(v.otherRvs?.first ?? 0n, v.otherRvs?.last ?? 0n)}, its own previous heartbeat being rv ${v.previousRv}: two processes acted as leader in turns`;
    case 'identity-shared':
      return `${writer} wrote heartbeat ${at} as lock identity ${v.detail}, which ${other} had claimed before: one identity names one process`;
    case 'seq-regressed':
      return `${writer}: heartbeat seq went ${v.detail} at rv ${v.firstRv}; one process only counts up`;
    case 'unobserved':
      return v.firstRv === 0n
        ? `writes to ${v.detail} before rv ${v.lastRv} were not observed (it was first seen in a list, not as a watched write): no split brain before can be ruled out`
        : `writes to ${v.detail} after rv ${v.firstRv} up to rv ${v.lastRv} were not observed (the watch relisted after 410 Gone): no split brain in between can be ruled out`;
  }
}

// ---------------------------------------------------------------------------
// Recordings as files: what the recorder saves when the checker fails, and what the unit tests read

/** A lock's history as JSON: bigints as strings, one event per write, the lock's and the heartbeat's only. */
export interface RecordedHistory {
  description: string;
  lock: LockUnderTest;
  events: RecordedEvent[];
}

export interface RecordedEvent {
  resource: 'configmaps' | 'leases';
  type: ObservedWrite<unknown>['type'];
  rv: string;
  relisted?: boolean;
  object: V1ConfigMap | V1Lease;
}

/** `history` as a file can hold it, in revision order, without managedFields. */
export function toRecordedHistory(history: LockHistory, description: string): RecordedHistory {
  const { lock } = history;
  const keep = (name: string | undefined) => name === lock.heartbeat || name === lock.name;
  const event = (resource: RecordedEvent['resource'], write: ObservedWrite<V1ConfigMap | V1Lease>): RecordedEvent => {
    const { managedFields: _, ...metadata } = write.object.metadata ?? {};
    return { resource, type: write.type, rv: String(write.rv), ...(write.relisted ? { relisted: true } : {}), object: { ...write.object, metadata } };
  };
  const events = [
    ...history.configMaps.filter((write) => keep(write.object.metadata?.name)).map((write) => event('configmaps', write)),
    ...(lock.kind === 'Lease' ? history.leases.filter((write) => write.object.metadata?.name === lock.name).map((write) => event('leases', write)) : []),
  ].sort((a, b) => (BigInt(a.rv) < BigInt(b.rv) ? -1 : BigInt(a.rv) > BigInt(b.rv) ? 1 : 0));
  const { kind, name, heartbeat, leaseIdentity } = lock;
  return { description, lock: { kind, name, heartbeat, ...(leaseIdentity ? { leaseIdentity } : {}) }, events };
}

/** The history a recorded file holds. */
export function fromRecordedHistory(recorded: RecordedHistory): LockHistory {
  const write = <T>(event: RecordedEvent): ObservedWrite<T> => ({
    type: event.type,
    rv: BigInt(event.rv),
    object: event.object as T,
    ...(event.relisted ? { relisted: true } : {}),
  });
  return {
    lock: recorded.lock,
    configMaps: recorded.events.filter((event) => event.resource === 'configmaps').map((event) => write<V1ConfigMap>(event)),
    leases: recorded.events.filter((event) => event.resource === 'leases').map((event) => write<V1Lease>(event)),
  };
}
