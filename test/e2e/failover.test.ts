/**
 * Failover WITH leaderhook, on the real cluster, against the baseline of
 * test/e2e/baseline.test.ts.
 *
 * leaderhook is installed once from deploy/; each scenario gets a fresh
 * namespace opted in (leaderhook.io/injection=enabled), the hook's Role bound
 * to the operators' ServiceAccount, and the operator manifests of
 * test/operators as they are — except that the leader-for-life operator's
 * POD_NAME env is removed, since the webhook must add it.
 *
 * The three baseline scenarios (lfl-operator Deployment; lfl-operator as two
 * bare pods with a backed-off standby; lease-operator Deployment) must show
 * the lock released BY THE HOOK (rule R1, on its SIGTERM) and still exactly one
 * leader at every heartbeat. Two more scenarios the baseline cannot survive
 * run with and without leaderhook:
 * - the leader pod stuck Terminating (a finalizer): without leaderhook the
 *   lock stays as long as the pod object does; with it, R1 frees the lock and
 *   the standby leads while the old pod is still Terminating;
 * - the operator ignoring SIGTERM: it is killed at the deadline, the hook's
 *   SIGTERM comes too late for R1, which must refuse: failover then takes
 *   the same path as without leaderhook.
 *
 * Durations are printed (and appended as JSON lines to LEADERHOOK_FAILOVER_OUT
 * when set), never asserted; docs/failover-e2e.md records them.
 *
 * Needs the leaderhook and operator images (scripts/build-local-image.sh,
 * test/operators/build.sh). Run inside the cluster's network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/failover.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { leaseLock, lflLock, type OperatorOptions, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import {
  finishRecording,
  hookSigtermLine,
  lastHeartbeatOf,
  lockGone,
  logOf,
  observedPod,
  operatorExited,
  operatorStatus,
  podGone,
  releaseEvents,
  waitForRecorded,
} from '../support/recording.ts';
import {
  assertBefore,
  hookedLeaseMarks,
  hookMarks,
  type Mark,
  mark,
  newLeaderMarks,
  oldLeaderMarks,
  operatorLibRetryMarks,
  printTimeline,
} from '../support/timeline.ts';
import {
  assertHandover,
  assertInjected,
  assertLeaseReleasedByR1,
  assertLockOwnedBy,
  assertNewLock,
  assertNotInjected,
  assertOneLeaderThroughout,
  assertReleasedByR1,
  deleteLeader,
  failOverLease,
  failOverLfl,
  waitForNewLeaderRunning,
  waitForPodGone,
  waitForSteadyLeader,
  waitForTakeover,
  whoLeads,
} from '../support/takeover.ts';
import type { Recording } from '../support/recorder.ts';
import { containerStatus } from '../support/container-runs.ts';
import { connectTestCluster, core } from '../support/kube.ts';
import { holdTerminating, installLeaderhook, releaseTerminating, setUpWithHook, setUpWithoutHook } from '../support/leaderhook.ts';

connectTestCluster();

/** How long the control waits to show that the lock of a pod stuck Terminating is never freed. */
const stuckControlMs = 40_000;
const out = process.env.LEADERHOOK_FAILOVER_OUT;

/** Marks the leader-for-life scenarios share: the old leader's stop, the hook's decision, the lock's way, the new leader. */
function lflMarks(recording: Recording, leader: string, newLeader: string, deleteIssued: number): Mark[] {
  const exited = operatorExited(recording, leader);
  const hookExited = recording.pods.find(
    (event) => event.object.metadata?.name === leader && containerStatus(event.object, RELEASE_HOOK_CONTAINER)?.state?.terminated,
  );
  const released = releaseEvents(recording, leader).at(0);
  const newLock = lflLock.events(recording).find((event) => event.type === 'ADDED' && lflLock.holderOf(event.object) === newLeader);
  return [
    ...oldLeaderMarks(recording, lflLock, leader, deleteIssued),
    ...mark(`old container seen exited (watch, exit code ${operatorStatus(exited?.object)?.state?.terminated?.exitCode})`, exited?.at),
    ...hookMarks(hookSigtermLine(recording, leader)),
    ...mark(`LeaderLockReleased Event for the old pod (watch): ${released?.object.message ?? ''}`, released?.at),
    ...mark('old hook container seen exited (watch)', hookExited?.at),
    ...mark('lock ConfigMap gone (watch)', lockGone(recording, lflLock)?.at),
    ...mark('old pod object gone (watch)', podGone(recording, leader)?.at),
    ...mark(`new lock created by ${newLeader} (watch)`, newLock?.at),
    ...newLeaderMarks(recording, lflLock, newLeader),
    ...operatorLibRetryMarks(recording, newLeader, deleteIssued),
  ];
}

/** The lock's way after the delete: released by a hook (which rule), or by the garbage collector after the owner pod was gone. */
function lockPath(recording: Recording, leader: string): string {
  const lockDeleted = lockGone(recording, lflLock);
  const podDeleted = podGone(recording, leader);
  const released = releaseEvents(recording, leader);
  if (released.length > 0) return `released by a release hook: ${released.map((event) => event.object.message).join('; ')}`;
  if (lockDeleted && podDeleted && podDeleted.rv < lockDeleted.rv) return 'deleted after the old pod object was gone: the garbage collector';
  return 'unknown';
}

// ---------------------------------------------------------------------------

/** The baseline's leader-for-life scenario with leaderhook: the old leader's hook frees the lock (R1) before its pod object is gone. */
async function lflFailoverWithHook(t: TestContext, shape: OperatorOptions['shape']): Promise<void> {
  const scenario = await setUpWithHook(t, 'lfl-operator', { shape });
  const { recording } = scenario;
  // As in the baseline, with bare pods the delete lands anywhere in the standby's 16 s retry cycle.
  const takeover = await failOverLfl(scenario, shape);
  const { leader, standby, deleteIssued, newLeader } = takeover;
  await waitForRecorded(recording, 'the R1 LeaderLockReleased Event of the old pod', async () => releaseEvents(recording, leader, 'R1').length > 0, 10_000);
  await finishRecording(recording);

  printTimeline(
    t,
    shape === 'deployment' ? 'lfl-operator with leaderhook' : 'lfl-operator with leaderhook (bare pods, standby backed off)',
    lflMarks(recording, leader, newLeader, deleteIssued),
    deleteIssued,
    out,
  );
  t.diagnostic(`${whoLeads(recording, newLeader, deleteIssued)}; lock ${lockPath(recording, leader)}`);

  assertInjected(recording);
  assertReleasedByR1(recording, lflLock, leader);
  // The hook's release, not the GC's: the lock goes while the old pod object still exists.
  const lockDeleted = lockGone(recording, lflLock);
  const podDeleted = podGone(recording, leader);
  assertBefore({ label: '"stopped" of the old leader', at: logOf(recording, leader, 'stopped')?.at }, { label: 'lock ConfigMap gone', at: lockDeleted?.at });
  assert.ok(
    lockDeleted && podDeleted && lockDeleted.rv < podDeleted.rv,
    `the lock (rv ${lockDeleted?.rv}) is gone before the old pod object (rv ${podDeleted?.rv})`,
  );
  assertNewLock(recording, takeover);
  assertHandover(recording, lflLock, leader, newLeader);
  if (shape === 'bare-pods') assert.equal(newLeader, standby, 'with no replacement pod, the standby that was waiting leads');
}

/**
 * The leader pod stays Terminating (a finalizer) after its containers have
 * stopped. Without leaderhook the lock stays: GC waits for the pod object.
 * With it, the hook's R1 frees the lock and the standby leads while the old
 * pod object still exists. Two bare pods: the standby is the only candidate.
 */
async function stuckTerminating(t: TestContext, withHook: boolean): Promise<void> {
  const { namespace, recording } = withHook
    ? await setUpWithHook(t, 'lfl-operator', { shape: 'bare-pods' })
    : await setUpWithoutHook(t, 'lfl-operator', { shape: 'bare-pods' });
  const { leader, standby } = await waitForSteadyLeader(recording, lflLock.heartbeat);
  let deleteIssued = 0;
  let holdReleased: number | undefined;
  // From here on the finalizer must go whatever happens, or the namespace could never be deleted.
  try {
    holdTerminating(namespace, leader);
    const leaderPod = await core.readNamespacedPod({ name: leader, namespace });
    await assertLockOwnedBy(namespace, leaderPod);
    deleteIssued = Date.now();
    await core.deleteNamespacedPod({ name: leader, namespace });
    await waitForRecorded(
      recording,
      'the old leader and its hook to have exited',
      async () => {
        const pod = recording.podNow.get(leader);
        return operatorStatus(pod)?.state?.terminated && (!withHook || containerStatus(pod, RELEASE_HOOK_CONTAINER)?.state?.terminated);
      },
      60_000,
    );
    if (withHook) {
      const newLock = await waitForTakeover(recording, lflLock, leader, deleteIssued);
      assert.equal(lflLock.holderOf(newLock.object), standby, 'the standby took the lock');
      await waitForNewLeaderRunning(recording, lflLock, standby);
      const old = await core.readNamespacedPod({ name: leader, namespace });
      assert.equal(old.metadata?.uid, leaderPod.metadata?.uid, 'the old leader pod object still exists');
      assert.ok(old.metadata?.deletionTimestamp, 'the old leader pod is Terminating');
      assert.ok(!podGone(recording, leader), 'the old leader pod was never gone while the standby took over');
    } else {
      await sleep(deleteIssued + stuckControlMs - Date.now());
      const old = await core.readNamespacedPod({ name: leader, namespace });
      assert.ok(old.metadata?.deletionTimestamp, 'the old leader pod is still Terminating');
      assert.equal(operatorStatus(old)?.state?.terminated !== undefined, true, 'its operator container stopped long ago');
      await assertLockOwnedBy(namespace, leaderPod);
      assert.equal(logOf(recording, standby, 'became leader'), undefined, `the standby does not lead ${stuckControlMs / 1000} s after the delete`);
      t.diagnostic(
        `${stuckControlMs / 1000} s after the delete: the old pod is ${old.status?.phase} and Terminating, the lock still names it, the standby waits`,
      );
    }
  } finally {
    // Stamped before the patch is sent: kubectl returns only after the
    // garbage collector may already have deleted the pod and its lock.
    holdReleased = Date.now();
    releaseTerminating(namespace, leader);
  }
  await waitForPodGone(recording, leader);
  await waitForNewLeaderRunning(recording, lflLock, standby);
  await finishRecording(recording);

  printTimeline(
    t,
    `lfl-operator, leader stuck Terminating, ${withHook ? 'with' : 'without'} leaderhook`,
    [...lflMarks(recording, leader, standby, deleteIssued), ...mark('finalizer removed by the test', holdReleased)],
    deleteIssued,
    out,
  );
  t.diagnostic(`lock ${lockPath(recording, leader)}`);

  const lockDeleted = lockGone(recording, lflLock);
  const newLock = lflLock.events(recording).find((event) => event.type === 'ADDED' && lflLock.holderOf(event.object) === standby);
  assert.ok(lockDeleted && newLock);
  if (withHook) {
    assertInjected(recording);
    assert.equal(releaseEvents(recording, leader, 'R1').length, 1, "the old pod's hook released the lock by R1");
    assert.ok(holdReleased !== undefined && newLock.at < holdReleased, 'the standby led before the finalizer was removed');
  } else {
    assertNotInjected(recording);
    assert.ok(holdReleased !== undefined && lockDeleted.at > holdReleased, 'the lock went only after the finalizer was removed');
  }
  assertOneLeaderThroughout(recording, lflLock, [leader, standby]);
}

/**
 * The operator ignores SIGTERM and is killed at the end of its 10 s grace
 * period. The hook's SIGTERM then comes at or after deadline − margin, so R1
 * must refuse: the hook cannot tell "stopped" from "about to be killed".
 * Failover takes the path it takes without leaderhook.
 */
async function ignoresSigterm(t: TestContext, withHook: boolean): Promise<void> {
  const options: OperatorOptions = { shape: 'bare-pods', extraArgs: ['--ignore-sigterm'] };
  const scenario = withHook
    ? await setUpWithHook(t, 'lfl-operator', { ...options, annotations: { 'leaderhook.io/termination-grace-period-seconds': '10' } })
    : await setUpWithoutHook(t, 'lfl-operator', options);
  const { namespace, recording } = scenario;
  const { leader, standby } = await waitForSteadyLeader(recording, lflLock.heartbeat);
  const leaderPod = observedPod(recording, leader);
  assert.equal(leaderPod.spec?.terminationGracePeriodSeconds, 10);
  await assertLockOwnedBy(namespace, leaderPod);

  const { deleteIssued, newLeader } = await deleteLeader(scenario, lflLock, leader);
  assert.equal(newLeader, standby, 'the standby took the lock');
  await finishRecording(recording);

  printTimeline(
    t,
    `lfl-operator ignoring SIGTERM, ${withHook ? 'with' : 'without'} leaderhook`,
    lflMarks(recording, leader, standby, deleteIssued),
    deleteIssued,
    out,
  );
  t.diagnostic(`lock ${lockPath(recording, leader)}`);

  const exited = operatorExited(recording, leader);
  const deletion = recording.pods.find((event) => event.object.metadata?.name === leader && event.object.metadata.deletionTimestamp)?.object.metadata
    ?.deletionTimestamp;
  assert.ok(logOf(recording, leader, 'signal ignored'), 'the old leader got SIGTERM and ignored it');
  assert.equal(operatorStatus(exited?.object)?.state?.terminated?.exitCode, 137, 'the old leader was killed (SIGKILL)');
  assert.ok(deletion, 'the deletion deadline was observed');
  const lastOld = lastHeartbeatOf(recording, lflLock, leader);
  assert.ok(lastOld && lastOld.at > deleteIssued + 5_000, 'the old leader kept leading after its SIGTERM, until it was killed');
  assertBefore({ label: 'old container killed', at: exited?.rv }, { label: 'lock ConfigMap gone', at: lockGone(recording, lflLock)?.rv });
  if (withHook) {
    assertInjected(recording);
    assert.deepEqual(
      releaseEvents(recording, leader, 'R1').map((event) => event.object.message),
      [],
      'no R1 release for a pod whose hook got SIGTERM at the deadline',
    );
    const hookLine = hookSigtermLine(recording, leader);
    assert.ok(
      hookLine,
      `the old pod's hook logged its SIGTERM decision: ${JSON.stringify(recording.logs.filter((l) => l.container === RELEASE_HOOK_CONTAINER && l.pod === leader).map((l) => l.msg))}`,
    );
    assert.equal(hookLine.fields.refusal, 'pastDeadline', `the hook refused for the deadline: ${hookLine.msg}`);
    const signalAt = Date.parse(String(hookLine.fields.signalAt));
    assert.ok(
      signalAt >= new Date(deletion).getTime() - 2_000,
      `the hook's SIGTERM (${hookLine.fields.signalAt}) came at or after deadline − 2 s (${deletion})`,
    );
  } else {
    assertNotInjected(recording);
  }
  assertOneLeaderThroughout(recording, lflLock, [leader, standby]);
}

/** The baseline's Lease scenario with leaderhook: the hook writes the leaderless record (R1) and another pod takes the lease at its next retry. */
async function leaseFailoverWithHook(t: TestContext): Promise<void> {
  const scenario = await setUpWithHook(t, 'lease-operator', { shape: 'deployment' });
  const { recording } = scenario;
  const failover = await failOverLease(scenario, leaseLock);
  await finishRecording(recording);

  printTimeline(t, 'lease-operator with leaderhook', hookedLeaseMarks(recording, leaseLock, failover), failover.deleteIssued, out);
  t.diagnostic(whoLeads(recording, failover.newLeader, failover.deleteIssued));

  assertLeaseReleasedByR1(recording, leaseLock, failover);
}

describe('failover with leaderhook', () => {
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  test("lfl-operator, Deployment: the old leader's hook releases the lock (R1) before its pod object is gone", async (t) => {
    await lflFailoverWithHook(t, 'deployment');
  });

  test('lfl-operator, two bare pods, standby backed off: the lock is released by R1; the standby still waits for its next retry', async (t) => {
    await lflFailoverWithHook(t, 'bare-pods');
  });

  test('lease-operator, Deployment: the hook writes the leaderless record (R1); another pod leads long before the lease would have expired', async (t) => {
    await leaseFailoverWithHook(t);
  });

  test('leader stuck Terminating, without leaderhook (control): the lock stays while the pod object does', async (t) => {
    await stuckTerminating(t, false);
  });

  test('leader stuck Terminating, with leaderhook: R1 frees the lock and the standby leads while the old pod is Terminating', async (t) => {
    await stuckTerminating(t, true);
  });

  test('operator ignoring SIGTERM, without leaderhook (control): killed at the deadline, failover through GC', async (t) => {
    await ignoresSigterm(t, false);
  });

  test('operator ignoring SIGTERM, with leaderhook: R1 refuses (SIGTERM at the deadline), failover as without it', async (t) => {
    await ignoresSigterm(t, true);
  });
});
