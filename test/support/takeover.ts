/**
 * A leader failover on the real cluster, step by step, for the end-to-end
 * tests with and without leaderhook (test/e2e/baseline.test.ts,
 * test/e2e/failover.test.ts, test/e2e/rollout-restart.test.ts): one steady
 * leader, its pod deleted, another pod taking the lock over; and the checks
 * both kinds of test share (the old leader's orderly stop, the handover to
 * one new leader), so each test states only what differs with and without
 * leaderhook.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1ConfigMap, V1Lease, V1Pod } from '@kubernetes/client-node';
import { core } from './kube.ts';
import { type LeaderLock, lflLock, OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER, type Scenario, type Shape } from './operators.ts';
import type { Observed, Recording } from './recorder.ts';
import {
  assertNoSplitBrain,
  heartbeats,
  heartbeatWriters,
  hookSignalTime,
  lastHeartbeatOf,
  lastRenewal,
  leaderlessLease,
  lockGone,
  loggedBy,
  logOf,
  observedPod,
  operatorExited,
  podGone,
  releaseEvents,
  waitForRecorded,
} from './recording.ts';
import { assertBefore } from './timeline.ts';

/** Time for a freshly created Deployment to elect its first leader (image is local, pods start fast). */
export const electionTimeoutMs = 120_000;
/** Leader-for-life: pod termination + GC + the standby's backoff (capped at 16 s + 20 % jitter). Lease: 15 s lease + 2 s retry. */
export const failoverTimeoutMs = 120_000;
/**
 * operator-lib's standby retries Create after 1, 2, 4, 8 s, then every 16 s
 * (+ up to 20 % jitter): after 1 + 2 + 4 + 8 + 16 s of waiting it sleeps in
 * 16 s steps, the state every standby of a long-lived leader is in. How
 * long a failover then takes depends on where in that cycle the leader goes:
 * anywhere, so tests delete at a random point of it.
 */
export const backedOffMs = 32_000;

/** Waits until exactly one pod logged "became leader", writes heartbeats, and the other pod is up and trying. */
export async function waitForSteadyLeader(recording: Recording, heartbeatName: string): Promise<{ leader: string; standby: string }> {
  const leader = await waitForRecorded(
    recording,
    'one pod to log "became leader"',
    async () => {
      const [first] = loggedBy(recording, 'became leader');
      return first?.pod;
    },
    electionTimeoutMs,
  );
  const standby = await waitForRecorded(
    recording,
    'the second pod to log "trying" and the leader to write 10 heartbeats',
    async () => {
      const other = loggedBy(recording, 'trying').find((line) => line.pod !== leader);
      const beats = heartbeats(recording, heartbeatName).filter((beat) => beat.holder === leader);
      return beats.length >= 10 && other?.pod;
    },
    electionTimeoutMs,
  );
  // The standby has had time to contend: it must still not lead.
  await sleep(3000);
  assert.deepEqual(
    loggedBy(recording, 'became leader').map((line) => line.pod),
    [leader],
    'exactly one pod logged "became leader"',
  );
  assert.deepEqual([...new Set(heartbeats(recording, heartbeatName).map((beat) => beat.holder))], [leader], 'heartbeats come only from the leader');
  return { leader, standby };
}

/** The leader-for-life lock, read from the API, names `pod` as operator-lib writes it. */
export async function assertLockOwnedBy(namespace: string, pod: V1Pod): Promise<void> {
  const lock = await core.readNamespacedConfigMap({ name: lflLock.name, namespace });
  assert.deepEqual(
    lock.metadata?.ownerReferences?.map(({ apiVersion, kind, name, uid, controller }) => ({ apiVersion, kind, name, uid, controller: controller ?? false })),
    [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid, controller: false }],
    'the lock has exactly one ownerReference, the leader pod, without the controller flag',
  );
}

/** Waits until `lock`, a Lease, has been recorded and asserts that `leader` holds it. */
export async function assertLeaseHeldBy(recording: Recording, lock: LeaderLock<V1Lease>, leader: string): Promise<void> {
  const lease = await waitForRecorded(recording, `Lease/${lock.name}`, async () => lock.events(recording).at(-1)?.object, 10_000);
  assert.equal(lock.holderOf(lease), leader, `lease holderIdentity ${lease.spec?.holderIdentity} names the leader pod ${leader}`);
}

/**
 * Waits until the standby's backoff has reached its 16 s cap, then a random
 * part of one more cycle: the delete lands anywhere in the standby's retry
 * cycle, as it would in the field.
 */
export async function waitUntilBackedOff(recording: Recording, standby: string): Promise<void> {
  const tried = logOf(recording, standby, 'trying');
  assert.ok(tried, `standby ${standby} logged "trying"`);
  const waitMs = tried.at + backedOffMs + Math.random() * 16_000 - Date.now();
  if (waitMs > 0) await sleep(waitMs);
}

/** The first lock event after `since` that names a holder other than `leader`: the takeover. */
export function waitForTakeover<L>(
  recording: Recording,
  lock: LeaderLock<L>,
  leader: string,
  since: number,
  timeoutMs = failoverTimeoutMs,
): Promise<Observed<L>> {
  return waitForRecorded(
    recording,
    `another pod to hold ${lock.kind}/${lock.name}`,
    async () =>
      lock.events(recording).find((event) => {
        const holder = event.type === 'DELETED' ? undefined : lock.holderOf(event.object);
        return event.at > since && holder !== undefined && holder !== leader;
      }),
    timeoutMs,
  );
}

/** Waits until `newLeader` logged "became leader" and wrote a heartbeat. */
export async function waitForNewLeaderRunning<L>(recording: Recording, lock: LeaderLock<L>, newLeader: string): Promise<void> {
  await waitForRecorded(
    recording,
    'the new leader to log "became leader" and write a heartbeat',
    async () => logOf(recording, newLeader, 'became leader') && heartbeats(recording, lock.heartbeat).some((beat) => beat.holder === newLeader),
    failoverTimeoutMs,
  );
}

export function waitForPodGone(recording: Recording, pod: string): Promise<Observed<V1Pod>> {
  return waitForRecorded(recording, `pod ${pod} to be gone`, async () => podGone(recording, pod), failoverTimeoutMs);
}

export interface Takeover<L> {
  /** Local time just before the delete was sent. */
  deleteIssued: number;
  /** The lock event that first named the new leader. */
  taken: Observed<L>;
  newLeader: string;
}

/**
 * Deletes the leader pod and waits until another pod holds the lock, leads
 * (logged "became leader", wrote a heartbeat), and the old pod object is gone.
 */
export async function deleteLeader<L>(scenario: Scenario, lock: LeaderLock<L>, leader: string): Promise<Takeover<L>> {
  const { namespace, recording } = scenario;
  const deleteIssued = Date.now();
  await core.deleteNamespacedPod({ name: leader, namespace });
  const taken = await waitForTakeover(recording, lock, leader, deleteIssued);
  const newLeader = lock.holderOf(taken.object) ?? '';
  await waitForNewLeaderRunning(recording, lock, newLeader);
  await waitForPodGone(recording, leader);
  return { deleteIssued, taken, newLeader };
}

export interface Failover<L> extends Takeover<L> {
  leader: string;
  /** The pod that was waiting when the leader was deleted. */
  standby: string;
}

/**
 * The leader-for-life failover of every scenario, up to the new leader
 * running: one steady leader whose lock names it (and, with two bare pods, a
 * standby backed off to its 16 s cap), then its pod deleted.
 */
export async function failOverLfl(scenario: Scenario, shape: Shape): Promise<Failover<V1ConfigMap>> {
  const { namespace, recording } = scenario;
  const { leader, standby } = await waitForSteadyLeader(recording, lflLock.heartbeat);
  if (shape === 'bare-pods') await waitUntilBackedOff(recording, standby);
  await assertLockOwnedBy(namespace, observedPod(recording, leader));
  return { leader, standby, ...(await deleteLeader(scenario, lflLock, leader)) };
}

/** The Lease failover of every scenario, up to the new leader running: one steady leader holding `lock`, a Lease, then its pod deleted. */
export async function failOverLease(scenario: Scenario, lock: LeaderLock<V1Lease>): Promise<Failover<V1Lease>> {
  const { leader, standby } = await waitForSteadyLeader(scenario.recording, lock.heartbeat);
  await assertLeaseHeldBy(scenario.recording, lock, leader);
  return { leader, standby, ...(await deleteLeader(scenario, lock, leader)) };
}

/** "new leader X is the standby that was waiting" (it tried before the delete), or the Deployment's replacement. */
export function whoLeads(recording: Recording, newLeader: string, deleteIssued: number): string {
  const waiting = loggedBy(recording, 'trying').some((line) => line.pod === newLeader && line.at < deleteIssued);
  return `new leader ${newLeader} is ${waiting ? 'the standby that was waiting' : 'the replacement pod the Deployment created'}`;
}

// Assertions every scenario shares.

/**
 * The old leader stopped in order, on the SIGTERM the delete caused: it
 * logged "stopping", wrote its last heartbeat, logged "stopped", and its
 * container was seen exited before its pod object was gone.
 */
export function assertOrderlyStop<L>(recording: Recording, lock: LeaderLock<L>, leader: string, deleteIssued: number): void {
  const stopping = logOf(recording, leader, 'stopping');
  const stopped = logOf(recording, leader, 'stopped');
  assertBefore({ label: 'delete issued', at: deleteIssued }, { label: '"stopping"', at: stopping?.at });
  assertBefore({ label: '"stopping"', at: stopping?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'last heartbeat of the old leader', at: lastHeartbeatOf(recording, lock, leader)?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'container exited', at: operatorExited(recording, leader)?.rv }, { label: 'pod object gone', at: podGone(recording, leader)?.rv });
}

/** Exactly one leader process at every heartbeat of the whole recording, and `holders` the pods that led, in turn. */
export function assertOneLeaderThroughout<L>(recording: Recording, lock: LeaderLock<L>, holders: string[]): void {
  assertNoSplitBrain(recording, lock);
  assert.deepEqual(heartbeatWriters(recording, lock), holders, 'the sequence of heartbeat writers');
}

/**
 * Leadership moved from `leader` to another pod, once: the new leader began
 * only after the old one had stopped, exactly those two pods ever led, and
 * exactly one led at every heartbeat.
 */
export function assertHandover<L>(recording: Recording, lock: LeaderLock<L>, leader: string, newLeader: string): void {
  assertBefore(
    { label: '"stopped" of the old leader', at: logOf(recording, leader, 'stopped')?.at },
    { label: '"became leader" of the new leader', at: logOf(recording, newLeader, 'became leader')?.at },
  );
  assert.notEqual(newLeader, leader);
  assert.deepEqual(
    [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
    [leader, newLeader],
    'two pods ever logged "became leader": the old leader, then the new one',
  );
  assertOneLeaderThroughout(recording, lock, [leader, newLeader]);
}

/** The new leader-for-life lock has one ownerReference, the new leader pod by UID, and came after the old lock was gone. */
export function assertNewLock(recording: Recording, taken: Takeover<V1ConfigMap>): void {
  assertBefore({ label: 'lock ConfigMap gone', at: lockGone(recording, lflLock)?.rv }, { label: 'new lock created', at: taken.taken.rv });
  const owners = taken.taken.object.metadata?.ownerReferences;
  assert.equal(owners?.length, 1);
  assert.equal(owners?.[0]?.uid, recording.podNow.get(taken.newLeader)?.metadata?.uid, 'the new lock is owned by the new leader pod (UID)');
}

// With leaderhook and without

/** The first version seen of each pod of the recording. */
function firstSeenPods(recording: Recording): V1Pod[] {
  const pods = new Map<string, V1Pod>();
  for (const event of recording.pods) {
    const name = event.object.metadata?.name ?? '';
    if (!pods.has(name)) pods.set(name, event.object);
  }
  return [...pods.values()];
}

/** Every pod came out of admission injected: annotation, POD_NAME by the downward API, the hook as the last init container, a native sidecar. */
export function assertInjected(recording: Recording): void {
  const pods = firstSeenPods(recording);
  assert.ok(pods.length >= 2, `pods were observed: ${pods.length}`);
  for (const pod of pods) {
    const name = pod.metadata?.name;
    assert.ok(pod.metadata?.annotations?.['leaderhook.io/injected'], `pod ${name} carries leaderhook.io/injected`);
    const hook = pod.spec?.initContainers?.at(-1);
    assert.equal(hook?.name, RELEASE_HOOK_CONTAINER, `the last init container of ${name} is the release hook`);
    assert.equal(hook?.restartPolicy, 'Always', `the release hook of ${name} is a native sidecar`);
    const operator = pod.spec?.containers.find((c) => c.name === OPERATOR_CONTAINER);
    assert.deepEqual(
      operator?.env?.find((e) => e.name === 'POD_NAME')?.valueFrom?.fieldRef?.fieldPath,
      'metadata.name',
      `the webhook gave the operator container of ${name} POD_NAME from the downward API`,
    );
  }
}

export function assertNotInjected(recording: Recording): void {
  for (const pod of firstSeenPods(recording)) {
    assert.equal(pod.metadata?.annotations?.['leaderhook.io/injected'], undefined, `pod ${pod.metadata?.name} of a namespace not opted in is not injected`);
    assert.ok(!pod.spec?.initContainers?.some((c) => c.name === RELEASE_HOOK_CONTAINER));
  }
}

/**
 * The old leader's hook released `lock` by R1, exactly once, on a SIGTERM
 * that came after the operator had logged "stopped".
 */
export function assertReleasedByR1<L>(recording: Recording, lock: LeaderLock<L>, leader: string): void {
  const r1 = releaseEvents(recording, leader, 'R1');
  assert.equal(
    r1.length,
    1,
    `one R1 LeaderLockReleased Event for ${leader}: ${JSON.stringify(recording.events.map((e) => [e.object.reason, e.object.message]))}`,
  );
  assert.match(r1[0]?.object.message ?? '', new RegExp(`${lock.kind}/${lock.name}`));
  // The kubelet reports the exit in a status update after the fact (often after the release): the
  // operator's own "stopped" and the hook's signal time order the two.
  assertBefore(
    { label: '"stopped" of the old leader', at: logOf(recording, leader, 'stopped')?.at },
    { label: "the hook's SIGTERM", at: hookSignalTime(recording, leader) },
  );
}

/**
 * A Lease failover with leaderhook (docs/design.md#leases-held-by-identity): every pod
 * injected; the old leader's hook wrote client-go's release record
 * (holderIdentity "", leaseDurationSeconds 1) by R1 after the old leader had
 * stopped; another pod took the lease after that record and well before the
 * old lease would have expired; leadership moved once, one leader at every
 * heartbeat.
 */
export function assertLeaseReleasedByR1(recording: Recording, lock: LeaderLock<V1Lease>, failover: Failover<V1Lease>): void {
  const { leader, deleteIssued, newLeader, taken } = failover;
  const oldExpiry = lastRenewal(recording, lock, leader).expiresAt;
  const leaderless = leaderlessLease(recording, lock, deleteIssued);
  assertInjected(recording);
  assertReleasedByR1(recording, lock, leader);
  assert.ok(leaderless, 'the hook wrote the leaderless record');
  assert.equal(leaderless.object.spec?.holderIdentity, '', 'released: holderIdentity ""');
  assert.equal(leaderless.object.spec?.leaseDurationSeconds, 1, 'released: leaseDurationSeconds 1');
  assertBefore({ label: '"stopped" of the old leader', at: logOf(recording, leader, 'stopped')?.at }, { label: 'leaderless record', at: leaderless.at });
  assertBefore({ label: 'leaderless record', at: leaderless.rv }, { label: 'lease acquired', at: taken.rv });
  assert.ok(oldExpiry !== undefined && taken.at < oldExpiry - 5_000, `the lease moved (${taken.at}) well before the old one would have expired (${oldExpiry})`);
  assertHandover(recording, lock, leader, newLeader);
}
