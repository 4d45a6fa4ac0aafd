/**
 * What a recording (test/support/recorder.ts) says about the operators of
 * test/operators: their heartbeats, log lines and release Events, when a
 * container exited, a pod or a lock was gone, and the split-brain check
 * (test/support/split-brain.ts) over the whole of it: no two operator
 * processes ever led at once.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Event, V1ContainerStatus, V1Lease, V1Pod } from '@kubernetes/client-node';
import { containerStatus } from './container-runs.ts';
import { waitFor } from './wait.ts';
import { type LeaderLock, OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER } from './operators.ts';
import { type LogLine, type Observed, parseTime, type Recording } from './recorder.ts';
import { checkSplitBrain, heartbeatOf, type LockHistory, type LockUnderTest, toRecordedHistory, type Violation } from './split-brain.ts';

export function operatorStatus(pod: V1Pod | undefined): V1ContainerStatus | undefined {
  return containerStatus(pod, OPERATOR_CONTAINER);
}

export interface Heartbeat {
  /** The writer's pod name. */
  holder: string;
  /** The writer's process (undefined for an operator that predates it: the split-brain check flags those). */
  processID?: string;
  seq: number;
  /** The leader's own time of the write. */
  at: number;
  rv: bigint;
}

/** The heartbeats of ConfigMap `name`, in arrival order (split-brain.ts reads them the same way). */
export function heartbeats(recording: Recording, name: string): Heartbeat[] {
  return recording.configMaps
    .filter((event) => event.type !== 'DELETED' && event.object.metadata?.name === name)
    .flatMap((event) => {
      const beat = heartbeatOf(event.object);
      return beat ? [{ holder: beat.pod, processID: beat.processID, seq: beat.seq, at: parseTime(beat.time), rv: event.rv }] : [];
    });
}

/** The pods whose heartbeats follow each other in write order, each once per turn: [old leader, new leader] for one handover. */
export function heartbeatWriters(recording: Recording, lock: LockUnderTest): string[] {
  const writers: string[] = [];
  const inWriteOrder = heartbeats(recording, lock.heartbeat).sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
  for (const beat of inWriteOrder) if (writers.at(-1) !== beat.holder) writers.push(beat.holder);
  return writers;
}

/** Log lines with message `msg` of `container` (the operator's by default), of any pod. */
export function loggedBy(recording: Recording, msg: string, container = OPERATOR_CONTAINER): LogLine[] {
  return recording.logs.filter((line) => line.container === container && line.msg === msg);
}

/** The first log line of `pod`'s `container` (the operator's by default) with message `msg`. */
export function logOf(recording: Recording, pod: string, msg: string, container = OPERATOR_CONTAINER): LogLine | undefined {
  return recording.logs.find((line) => line.pod === pod && line.container === container && line.msg === msg);
}

/** The release hook's line about its SIGTERM decision (every message of that path starts "SIGTERM:"). */
export function hookSigtermLine(recording: Recording, pod: string): LogLine | undefined {
  return recording.logs.find((line) => line.pod === pod && line.container === RELEASE_HOOK_CONTAINER && line.msg.startsWith('SIGTERM:'));
}

/** When `pod`'s hook got SIGTERM, by its own clock ("signalAt" of its decision line). */
export function hookSignalTime(recording: Recording, pod: string): number | undefined {
  const signalAt = hookSigtermLine(recording, pod)?.fields.signalAt;
  return typeof signalAt === 'string' ? Date.parse(signalAt) : undefined;
}

/** `LeaderLockReleased` Events about `pod` whose message names `rule` (R0–R3). */
export function releaseEvents(recording: Recording, pod: string, rule?: string): Observed<CoreV1Event>[] {
  return recording.events.filter(
    (event) =>
      event.type === 'ADDED' &&
      event.object.reason === 'LeaderLockReleased' &&
      event.object.involvedObject?.name === pod &&
      (rule === undefined || (event.object.message ?? '').includes(`(${rule}:`)),
  );
}

function historyOf(recording: Recording, lock: LockUnderTest): LockHistory {
  return { lock, configMaps: recording.configMaps, leases: recording.leases };
}

/** What the split-brain check finds so far for `lock`, by default for every lock of the recording (a benchmark counts them per trial; tests assert there are none). */
export function splitBrainViolations(recording: Recording, lock?: LockUnderTest): Violation[] {
  return (lock ? [lock] : recording.locks).flatMap((each) => checkSplitBrain(historyOf(recording, each)));
}

/**
 * The split-brain check over the whole recording, for `lock` or else every
 * lock of the recording whose heartbeats were recorded (at least one): no
 * two operator processes ever wrote heartbeats in turns, and each heartbeat
 * came from the process holding the lock at that revision
 * (test/support/split-brain.ts). On failure each failing lock's history is
 * saved as a file in the format of test/testdata/split-brain/ (in
 * LEADERHOOK_SPLIT_BRAIN_OUT, else a fresh temporary directory), ready to
 * become a fixture.
 */
export function assertNoSplitBrain(recording: Recording, lock?: LockUnderTest): void {
  const beating = (each: LockUnderTest) => heartbeats(recording, each.heartbeat).length > 0;
  const locks = lock ? [lock] : recording.locks.filter(beating);
  assert.ok(
    locks.length > 0 && locks.every(beating),
    `heartbeats of ${(lock ? [lock] : recording.locks).map((each) => `ConfigMap/${each.heartbeat}`).join(' or ')} were recorded: the split-brain check has something to check`,
  );
  const failed = locks.flatMap((each) => {
    const violations = checkSplitBrain(historyOf(recording, each));
    return violations.length > 0 ? [{ lock: each, violations }] : [];
  });
  if (failed.length === 0) return;
  const dir = process.env.LEADERHOOK_SPLIT_BRAIN_OUT ?? mkdtempSync(join(tmpdir(), 'leaderhook-split-brain-'));
  mkdirSync(dir, { recursive: true });
  const reports = failed.map(({ lock: each, violations }) => {
    const file = join(dir, `${recording.namespace}-${each.name}.json`);
    const recorded = toRecordedHistory(historyOf(recording, each), `recorded in namespace ${recording.namespace}: ${violations.length} violations`);
    writeFileSync(file, `${JSON.stringify({ ...recorded, expect: [] }, null, 1)}\n`);
    return `split brain over ${each.kind}/${each.name}: ${violations.length} violations\n${violations.map((v) => `- ${v.explanation}`).join('\n')}\nits history is saved in ${file}`;
  });
  const interruptions = recording.interruptions.length > 0 ? `\nrecording interruptions: ${recording.interruptions.join('; ')}` : '';
  assert.fail(`${reports.join('\n')}${interruptions}`);
}

/** What was recorded so far, in a few lines: for failure messages. */
export function summary(recording: Recording): string {
  const pods = [...recording.podNow].map(
    ([name, pod]) => `${name}: ${pod ? (pod.status?.phase ?? 'no phase') : 'gone'}, ${recording.logs.filter((line) => line.pod === name).length} log lines`,
  );
  const errors = recording.errors.map((error) => error.message);
  return `recorded: ${recording.pods.length} pod, ${recording.configMaps.length} ConfigMap, ${recording.leases.length} Lease, ${recording.events.length} Event events; pods: ${pods.join('; ') || 'none'}${errors.length ? `; errors: ${errors.join('; ')}` : ''}${recording.interruptions.length ? `; interruptions: ${recording.interruptions.join('; ')}` : ''}`;
}

/** waitFor, with what the recording holds named when it times out. */
export async function waitForRecorded<T>(
  recording: Recording,
  description: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs: number,
): Promise<T> {
  try {
    return await waitFor(description, check, timeoutMs, 100);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${summary(recording)}`, { cause: error });
  }
}

/** The pod `name` as last seen by the recording; asserts it was seen with a UID. */
export function observedPod(recording: Recording, name: string): V1Pod {
  const pod = recording.podNow.get(name);
  assert.ok(pod?.metadata?.uid, `pod ${name} was observed`);
  return pod;
}

/**
 * Observes a second more (heartbeats of the new leader), stops the
 * recording, asserts it lost nothing and runs the split-brain check on it.
 */
export async function finishRecording(recording: Recording): Promise<void> {
  await sleep(1000);
  await recording.stop();
  assert.deepEqual(recording.errors, []);
  assertNoSplitBrain(recording);
}

/** The first pod event that shows `pod`'s operator container terminated. */
export function operatorExited(recording: Recording, pod: string): Observed<V1Pod> | undefined {
  return recording.pods.find((event) => event.object.metadata?.name === pod && operatorStatus(event.object)?.state?.terminated);
}

export function podGone(recording: Recording, pod: string): Observed<V1Pod> | undefined {
  return recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === pod);
}

/** The newest revision the recording has seen, of any object: where the window of a trial or a check starts. */
export function newestRv(recording: Recording): bigint {
  let rv = 0n;
  for (const list of [recording.configMaps, recording.leases, recording.pods, recording.kopfPeerings]) {
    for (const event of list) if (event.rv > rv) rv = event.rv;
  }
  return rv;
}

/** The first deletion of the lock (the ConfigMap lock: by the GC or a release hook). */
export function lockGone<L>(recording: Recording, lock: LeaderLock<L>): Observed<L> | undefined {
  return lock.events(recording).find((event) => event.type === 'DELETED');
}

export function lastHeartbeatOf<L>(recording: Recording, lock: LeaderLock<L>, pod: string): Heartbeat | undefined {
  return heartbeats(recording, lock.heartbeat)
    .filter((beat) => beat.holder === pod)
    .at(-1);
}

export function firstHeartbeatOf<L>(recording: Recording, lock: LeaderLock<L>, pod: string): Heartbeat | undefined {
  return heartbeats(recording, lock.heartbeat).find((beat) => beat.holder === pod);
}

/** The first revision of `lock`, a Lease, seen after `since` that names no holder: a release record (the hook's, by R1). */
export function leaderlessLease(recording: Recording, lock: LeaderLock<V1Lease>, since: number): Observed<V1Lease> | undefined {
  return lock.events(recording).find((event) => event.at > since && event.type !== 'DELETED' && !event.object.spec?.holderIdentity);
}

/** The old leader's last renewal of `lock`, a Lease, and when the lease would run out without another. */
export function lastRenewal(
  recording: Recording,
  lock: LeaderLock<V1Lease>,
  leader: string,
): { renewedAt?: number; durationSeconds?: number; expiresAt?: number } {
  const spec = lock
    .events(recording)
    .filter((event) => lock.holderOf(event.object) === leader)
    .at(-1)?.object.spec;
  const renewedAt = spec?.renewTime ? new Date(spec.renewTime).getTime() : undefined;
  const durationSeconds = spec?.leaseDurationSeconds;
  return { renewedAt, durationSeconds, expiresAt: renewedAt === undefined ? undefined : renewedAt + (durationSeconds ?? 0) * 1000 };
}
