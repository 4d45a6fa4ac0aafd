/**
 * The e2e scenarios of an operator whose LeaderElector holds its Lease as the
 * pod's name and leaves ReleaseOnCancel false (client-go-operator,
 * josdk-operator): leaderhook's hook counts a Lease whose holderIdentity is
 * exactly POD_NAME as its pod's own (docs/design.md#leases-held-by-identity). Test
 * files call describePodNameLeaseFailover after connectTestCluster().
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { containerStatus } from './container-runs.ts';
import { holdTerminating, installLeaderhook, releaseTerminating, setUpWithHook, setUpWithoutHook } from './leaderhook.ts';
import { core } from './kube.ts';
import { type LeaderLock, OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER, type Scenario } from './operators.ts';
import type { V1Lease } from '@kubernetes/client-node';
import type { Recording } from './recorder.ts';
import { finishRecording, heartbeats, hookSigtermLine, lastRenewal, loggedBy, logOf, observedPod, releaseEvents, waitForRecorded } from './recording.ts';
import { expiredLeaseMarks, hookedLeaseMarks, mark, printTimeline } from './timeline.ts';
import {
  assertHandover,
  assertInjected,
  assertLeaseHeldBy,
  assertLeaseReleasedByR1,
  assertNotInjected,
  assertOneLeaderThroughout,
  assertOrderlyStop,
  type Failover,
  failOverLease,
  type Takeover,
  waitForNewLeaderRunning,
  waitForPodGone,
  waitForSteadyLeader,
  waitForTakeover,
  whoLeads,
} from './takeover.ts';

/** An operator of test/operators whose LeaderElector holds a Lease as the pod's name, with ReleaseOnCancel false. */
export interface PodNameLeaseOperator {
  /** Its name in test/operators/manifests (and test/operators/build.sh). */
  operator: string;
  /** What the describe block calls it, e.g. 'client-go-operator (client-go LeaderElector, Lease held as the pod name)'. */
  title: string;
  /** Its Lease (test/support/operators.ts). */
  lock: LeaderLock<V1Lease>;
  /** Its lease duration, in ms. */
  leaseDurationMs: number;
}

const out = process.env.LEADERHOOK_FAILOVER_OUT;
/** Long enough for one steady leader first (waitForSteadyLeader), short enough that only one crash falls within the test. */
const crashAfter = '20s';

/** The Lease, as last recorded before `before`, names `leader` by its pod name alone: the identity the hook counts as its pod's own. */
function assertHeldAsPodName(lock: LeaderLock<V1Lease>, recording: Recording, leader: string, before: number): void {
  const lease = lock
    .events(recording)
    .filter((event) => event.at < before)
    .at(-1);
  assert.equal(lease?.object.spec?.holderIdentity, leader, `holderIdentity is the leader's pod name ${leader}`);
}

/** How the leader pod goes: deleted, or deleted and held Terminating by a finalizer until another pod leads. */
type Fault = 'delete' | 'stuck-terminating';
const FAULTS: Fault[] = ['delete', 'stuck-terminating'];
const FAULT_TEXT: Record<Fault, string> = { delete: 'deleted', 'stuck-terminating': 'deleted and stuck Terminating' };

interface LeaseFailover extends Failover<V1Lease> {
  /** When the test removed the finalizer that held the old pod Terminating, if it did. */
  holdReleased?: number;
}

/**
 * failOverLease with the leader pod held Terminating by a finalizer (as a
 * stuck volume detach or controller would) from before its delete until
 * another pod leads. A Lease does not name its holder's pod object, so the
 * takeover comes as after a plain delete; asserts that the old pod object
 * was still there, Terminating, while the new leader ran, then lets it go.
 */
async function failOverLeaseHeldTerminating(scenario: Scenario, lock: LeaderLock<V1Lease>): Promise<LeaseFailover> {
  const { namespace, recording } = scenario;
  const { leader, standby } = await waitForSteadyLeader(recording, lock.heartbeat);
  await assertLeaseHeldBy(recording, lock, leader);
  const leaderUid = observedPod(recording, leader).metadata?.uid;
  holdTerminating(namespace, leader);
  let holdReleased: number;
  let takeover: Takeover<V1Lease>;
  // From here on the finalizer must go whatever happens, or the namespace could never be deleted.
  try {
    const deleteIssued = Date.now();
    await core.deleteNamespacedPod({ name: leader, namespace });
    const taken = await waitForTakeover(recording, lock, leader, deleteIssued);
    const newLeader = lock.holderOf(taken.object) ?? '';
    await waitForNewLeaderRunning(recording, lock, newLeader);
    const old = await core.readNamespacedPod({ name: leader, namespace });
    assert.equal(old.metadata?.uid, leaderUid, 'the old leader pod object still exists while the new leader runs');
    assert.ok(old.metadata?.deletionTimestamp, 'the old leader pod is Terminating');
    takeover = { deleteIssued, taken, newLeader };
  } finally {
    // Stamped before the patch is sent: the pod can be gone before kubectl returns.
    holdReleased = Date.now();
    releaseTerminating(namespace, leader);
  }
  await waitForPodGone(recording, leader);
  return { leader, standby, ...takeover, holdReleased };
}

function failOverAs(fault: Fault, scenario: Scenario, lock: LeaderLock<V1Lease>): Promise<LeaseFailover> {
  return fault === 'delete' ? failOverLease(scenario, lock) : failOverLeaseHeldTerminating(scenario, lock);
}

const holdMarks = ({ holdReleased }: LeaseFailover) => mark('finalizer removed by the test', holdReleased);

/**
 * The scenarios of such an operator on the real cluster (the e2e tests of
 * client-go-operator and josdk-operator call it at their top level), the
 * first two for a leader pod deleted and for one deleted and held
 * Terminating by a finalizer until another pod leads:
 * - without leaderhook (control), the lease is handed on only once it has
 *   expired: it always names a holder, and the next holder acquires it no
 *   earlier than the old leader's last renewal + the lease duration;
 * - with leaderhook, the old pod's hook writes the release record by R1 after
 *   the operator has stopped, and another pod leads well before the old lease
 *   would have expired (while the stuck pod object is still Terminating);
 * - with leaderhook, a crash of the leader's operator container, which the
 *   kubelet restarts, releases nothing (docs/design.md#what-is-never-released):
 *   the restarted process, under the same identity, renews the lease at once
 *   (the LeaderElector takes a lease naming itself as its own), the standby
 *   never leads and the hook is not restarted.
 * Each run is recorded and passes the split-brain check. Durations are
 * printed (and appended to LEADERHOOK_FAILOVER_OUT when set), never asserted
 * beyond the lease duration.
 */
export function describePodNameLeaseFailover({ operator, title, lock, leaseDurationMs }: PodNameLeaseOperator): void {
  describe(title, () => {
    let uninstall: (() => Promise<void>) | undefined;
    before(async () => {
      uninstall = await installLeaderhook();
    });
    after(async () => {
      await uninstall?.();
    });

    async function failOverWithoutHook(t: TestContext, fault: Fault): Promise<void> {
      const scenario = await setUpWithoutHook(t, operator, { shape: 'deployment' });
      const { recording } = scenario;
      const failover = await failOverAs(fault, scenario, lock);
      const { leader, deleteIssued, newLeader, taken } = failover;
      await finishRecording(recording);

      printTimeline(
        t,
        `${operator} without leaderhook, leader ${FAULT_TEXT[fault]}`,
        [...expiredLeaseMarks(recording, lock, failover), ...holdMarks(failover)],
        deleteIssued,
        out,
      );
      t.diagnostic(whoLeads(recording, newLeader, deleteIssued));

      assertNotInjected(recording);
      assertHeldAsPodName(lock, recording, leader, deleteIssued);
      assertOrderlyStop(recording, lock, leader, deleteIssued);
      assert.ok(
        lock.events(recording).every((event) => lock.holderOf(event.object)),
        'the lease always names a holder (no release on cancel, no hook)',
      );
      const { expiresAt } = lastRenewal(recording, lock, leader);
      const acquireTime = taken.object.spec?.acquireTime;
      const acquiredAt = acquireTime ? new Date(acquireTime).getTime() : undefined;
      // Both times are the node's clock (the old leader's renewTime, the new one's acquireTime).
      assert.ok(
        expiresAt !== undefined && acquiredAt !== undefined && acquiredAt >= expiresAt,
        `the lease was acquired (${acquireTime}) only once the old one had expired (${expiresAt === undefined ? undefined : new Date(expiresAt).toISOString()})`,
      );
      assertHandover(recording, lock, leader, newLeader);
    }

    async function failOverWithHook(t: TestContext, fault: Fault): Promise<void> {
      const scenario = await setUpWithHook(t, operator, { shape: 'deployment' });
      const { recording } = scenario;
      const failover = await failOverAs(fault, scenario, lock);
      const { leader, deleteIssued, newLeader } = failover;
      await waitForRecorded(recording, 'the R1 LeaderLockReleased Event of the old pod', async () => releaseEvents(recording, leader, 'R1').length > 0, 10_000);
      await finishRecording(recording);

      printTimeline(
        t,
        `${operator} with leaderhook, leader ${FAULT_TEXT[fault]}`,
        [...hookedLeaseMarks(recording, lock, failover), ...holdMarks(failover)],
        deleteIssued,
        out,
      );
      t.diagnostic(whoLeads(recording, newLeader, deleteIssued));

      assertHeldAsPodName(lock, recording, leader, deleteIssued);
      assertOrderlyStop(recording, lock, leader, deleteIssued);
      assertLeaseReleasedByR1(recording, lock, failover);
    }

    for (const fault of FAULTS) {
      test(`without leaderhook (control): the leader pod ${FAULT_TEXT[fault]}, another pod leads only once the lease has expired`, (t) =>
        failOverWithoutHook(t, fault));
      test(`with leaderhook: the leader pod ${FAULT_TEXT[fault]}, its hook releases the lease (R1); another pod leads well before it would have expired`, (t) =>
        failOverWithHook(t, fault));
    }

    test('with leaderhook: the leader crashes and is restarted; nothing is released, the restarted operator renews its own lease at once', async (t) => {
      const scenario = await setUpWithHook(t, operator, { shape: 'deployment', extraArgs: [`--crash-after=${crashAfter}`] });
      const { recording } = scenario;
      const { leader, standby } = await waitForSteadyLeader(recording, lock.heartbeat);
      t.diagnostic(`leader ${leader}, standby ${standby}; every operator process exits 1 after ${crashAfter}`);

      const restartedLeading = await waitForRecorded(
        recording,
        'the leader\'s restarted operator to log "became leader"',
        async () => loggedBy(recording, 'became leader').find((line) => line.pod === leader && line.restartCount >= 1),
        120_000,
      );
      await waitForRecorded(
        recording,
        "the leader's restarted operator to write 10 heartbeats",
        async () => heartbeats(recording, lock.heartbeat).filter((beat) => beat.processID === restartedLeading.fields.processID).length >= 10,
        30_000,
      );
      // A few seconds of the restarted operator leading, with the standby contending.
      await sleep(3_000);
      await finishRecording(recording);

      const crashed = logOf(recording, leader, 'crashing');
      const renewalBeforeCrash = lock
        .events(recording)
        .filter((event) => crashed && event.at < crashed.at)
        .at(-1)?.object.spec;
      const renewedAt = renewalBeforeCrash?.renewTime ? new Date(renewalBeforeCrash.renewTime).getTime() : undefined;
      printTimeline(
        t,
        `${operator} with leaderhook, leader crashed`,
        [
          ...mark('old leader logged "crashing"', crashed?.at),
          ...mark('lease last renewed before the crash (renewTime)', renewedAt),
          ...mark(`lease would have expired (renewTime + ${leaseDurationMs / 1000} s)`, renewedAt === undefined ? undefined : renewedAt + leaseDurationMs),
          ...mark('restarted operator logged "became leader"', restartedLeading.at),
        ],
        crashed?.at ?? restartedLeading.at,
        out,
      );

      assertInjected(recording);
      assert.ok(crashed, `the leader's operator crashed (--crash-after=${crashAfter})`);
      const pod = observedPod(recording, leader);
      assert.ok((containerStatus(pod, OPERATOR_CONTAINER)?.restartCount ?? 0) >= 1, "the kubelet restarted the leader's operator container");
      assert.equal(containerStatus(pod, RELEASE_HOOK_CONTAINER)?.restartCount, 0, 'the hook itself was not restarted');
      assert.equal(hookSigtermLine(recording, leader), undefined, "the leader's hook got no SIGTERM");
      assert.deepEqual(
        recording.events.filter((e) => e.object.reason === 'LeaderLockReleased' || e.object.reason === 'LeaderLockWouldRelease').map((e) => e.object.message),
        [],
        'no release recorded',
      );

      // The LeaderElector takes a lease that names its own identity as its own:
      // the restarted process renewed it, keeping acquireTime and leaseTransitions,
      // before it could expire, and the lease never named anyone else.
      const leases = lock.events(recording).map((event) => event.object.spec);
      assert.deepEqual([...new Set(leases.map((spec) => spec?.holderIdentity))], [leader], 'the lease named the leader pod throughout');
      assert.equal(
        new Set(leases.map((spec) => String(spec?.acquireTime))).size,
        1,
        `one acquireTime throughout: ${leases.map((spec) => spec?.acquireTime).join(', ')}`,
      );
      assert.equal(new Set(leases.map((spec) => spec?.leaseTransitions ?? 0)).size, 1, 'no leader transition');
      assert.ok(
        renewedAt !== undefined && restartedLeading.at < renewedAt + leaseDurationMs,
        `the restarted operator led (${restartedLeading.at}) before the lease would have expired (${renewedAt} + ${leaseDurationMs} ms)`,
      );
      assert.deepEqual(
        [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
        [leader],
        'only the leader pod ever logged "became leader": the standby never led',
      );
      assertOneLeaderThroughout(recording, lock, [leader]);
    });
  });
}
