/**
 * An operator on kopf (test/operators/kopf-operator) with kopf's own peering:
 * no lock, but a KopfPeering object whose status holds one entry per replica,
 * `status.<POD_ID>: {priority, lifetime, lastseen}`, POD_ID the pod's UID (kopf
 * _core/engines/peering.py), kept alive every 50-55 s (lifetime 60 s); a
 * replica that sees a live entry of a higher priority pauses, and resumes once
 * no such entry is left. The replicas are kopf-operator-0 (priority 100, the
 * leader) and kopf-operator-1 (99), two bare pods of the StatefulSet's template
 * in test/operators/manifests/kopf-operator.yaml: a StatefulSet would bring the
 * deleted leader back under the same name, identity and priority, and it would
 * take over again at once.
 *
 * With leaderhook and without (docs/design.md#kopf-peering-entries):
 * - the leader pod deleted: kopf's clean exit removes its own entry (a merge
 *   patch setting it to null, on cancelling its keep-alive), and the standby
 *   resumes at once, long before the entry would have expired; the hook
 *   removes nothing;
 * - the leader pod deleted while its operator ignores SIGTERM, so that the
 *   kubelet SIGKILLs it at the end of the grace period: the entry stays, and
 *   the standby resumes only when it has expired (lastseen + 60 s), removing
 *   it itself as a dead peer; the hook's SIGTERM comes too late for R1 and the
 *   pod is gone (no R3), so it removes nothing either;
 * - the leader pod deleted while its operator exits at once on SIGTERM without
 *   kopf's cleanup (a process that crashes while stopping): without
 *   leaderhook the standby waits for the entry to expire; with it, the old
 *   pod's hook removes the entry by R1 and the standby resumes at once;
 * - the same with the deleted pod held Terminating by a finalizer until the
 *   standby leads: kopf's entry does not name the pod object, so the same;
 * - the leader failed by its kubelet (activeDeadlineSeconds) while ignoring
 *   SIGTERM, its pod never deleted: without leaderhook the standby waits for
 *   the entry to expire; with it, the standby's hook removes the entry by R2
 *   once the pod is Failed.
 * Each run passes the split-brain check with the peering as the lock: every heartbeat
 * is written by the replica whose entry has the highest priority, as of the
 * peering's latest revision before it.
 *
 * Needs the leaderhook and operator images (scripts/build-local-image.sh,
 * test/operators/build.sh). Run inside the cluster's network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/kopf-operator.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { core, connectTestCluster } from '../support/kube.ts';
import {
  beatsOf,
  deleteLeader,
  entryReleasedBy,
  failLeaderByDeadline,
  type KopfFailover,
  type KopfScenario,
  kopfMarks,
  LEADER,
  lastEntry,
  peeringReleaseLines,
  STANDBY,
  setUpKopf,
  standbyTakesOver,
  stopAndCheck,
} from '../support/kopf-scenario.ts';
import { installLeaderhook, kubectl } from '../support/leaderhook.ts';
import { kopfPeering, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { hookSignalTime, logOf, podGone, summary } from '../support/recording.ts';
import { assertInjected, assertNotInjected } from '../support/takeover.ts';
import { assertBefore, printTimeline } from '../support/timeline.ts';

connectTestCluster();
const out = process.env.LEADERHOOK_FAILOVER_OUT;

/** Observes a second more, stops, and checks the recording and the peering watch: nothing lost, no split brain with the peering as the lock. */
async function finish(scenario: KopfScenario): Promise<void> {
  const { violations, lost, heartbeats } = await stopAndCheck(scenario);
  assert.deepEqual(lost, [], 'the recording and the peering watch lost nothing');
  assert.ok(heartbeats > 0, 'heartbeats were recorded');
  assert.deepEqual(
    violations.map((v) => v.explanation),
    [],
    `no split brain over KopfPeering/${kopfPeering.name} (as a Lease held by its top-priority entry)\n${summary(scenario.recording)}`,
  );
}

/** setUpKopf with the test's own cleanup. */
const setUp = (t: TestContext, ...rest: Parameters<typeof setUpKopf> extends [unknown, ...infer R] ? R : never) =>
  setUpKopf((cleanup) => t.after(cleanup), ...rest);

/**
 * leaderhook left kopf's peering alone: no LeaderLockReleased Event, no hook
 * line telling of a released entry, and the leader's entry was not removed by its hook.
 * This cluster's API server keeps no managedFields (a write's field manager
 * cannot be read back), so the removal is placed in time instead: on a clean
 * exit before the old pod's hook got its SIGTERM (the hook acts on nothing
 * before), after a kill only once the old pod, and so its hook, was gone.
 */
function assertHookLeftPeeringAlone(scenario: KopfScenario, failover: KopfFailover, hook: boolean, clean: boolean): void {
  const { recording } = scenario;
  const released = recording.events.filter((event) => event.object.reason === 'LeaderLockReleased');
  assert.deepEqual(
    released.map((event) => event.object.message),
    [],
    'no LeaderLockReleased Event',
  );
  const hookLines = recording.logs.filter((line) => line.container === RELEASE_HOOK_CONTAINER);
  assert.deepEqual(
    peeringReleaseLines(recording).map((line) => line.msg),
    [],
    'no hook released a KopfPeering entry',
  );
  if (clean && hook) {
    assertBefore({ label: 'entry gone', at: failover.removed.at }, { label: "the old pod's hook got SIGTERM", at: hookSignalTime(recording, LEADER) });
  } else if (!clean) {
    assertBefore({ label: 'old pod object gone', at: podGone(recording, LEADER)?.rv }, { label: 'entry gone', at: failover.removed.rv });
  }
  if (hook)
    assert.ok(
      hookLines.some((line) => line.pod === LEADER),
      `${LEADER}'s hook ran and was recorded`,
    );
}

/**
 * The leader deleted: kopf's clean exit set its own entry to null after
 * SIGTERM ("stopping"), and the standby, the only other replica, led well
 * before the entry would have expired.
 */
async function cleanExit(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUp(t, hook);
  const failover = await deleteLeader(scenario, 60_000);
  await finish(scenario);
  const { recording, peering } = scenario;
  printTimeline(t, `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader deleted`, kopfMarks(scenario, failover, hook), failover.deleteIssued, out);
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - failover.deleteIssued) / 1000).toFixed(2)} s after the delete`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  // the entry's removal is seen through a watch, which lags the operator's own log lines by a few
  // milliseconds: only the order that lag cannot reverse is asserted
  assertBefore({ label: '"stopping" of the old leader', at: logOf(recording, LEADER, 'stopping')?.at }, { label: 'entry gone', at: failover.removed.at });
  assert.ok(logOf(recording, LEADER, 'stopped'), 'the old leader stopped by itself (a clean exit)');
  const firstBeat = beatsOf(recording, STANDBY)[0];
  assertBefore({ label: 'entry gone', at: failover.removed.rv }, { label: "the new leader's first heartbeat", at: firstBeat?.rv });
  const { deadline } = lastEntry(peering, scenario.leaderId, failover.removed.at);
  assert.ok(
    deadline !== undefined && failover.became < deadline - 10_000,
    `the standby led (${failover.became}) well before the entry would have expired (${deadline})`,
  );
  assertHookLeftPeeringAlone(scenario, failover, hook, true);
}

/**
 * The leader deleted while its operator ignores SIGTERM: the kubelet SIGKILLs
 * it at the end of the grace period and kopf never removes its entry. Without
 * leaderhook the standby resumes only once the entry has expired, and removes
 * it itself. With it, the old pod's hook gets its SIGTERM too late for R1; but
 * the kubelet reports the deleted pod Failed, every container terminated,
 * before it is removed, and the standby's hook, if it reads the pod in that
 * window, removes the entry by R2; if the pod is gone first, nothing (no R3),
 * and the same wait.
 */
async function killedExit(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUp(t, hook, ['--ignore-sigterm']);
  const failover = await deleteLeader(scenario, 120_000);
  await finish(scenario);
  const { recording } = scenario;
  printTimeline(t, `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader SIGKILLed`, kopfMarks(scenario, failover, hook), failover.deleteIssued, out);
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - failover.deleteIssued) / 1000).toFixed(2)} s after the delete`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  assert.ok(logOf(recording, LEADER, 'signal ignored'), 'the old leader ignored SIGTERM');
  assert.equal(logOf(recording, LEADER, 'stopped'), undefined, 'the old leader never stopped by itself');
  const byR2 = hook && entryReleasedBy(recording) === 'R2';
  t.diagnostic(byR2 ? "the standby's hook read the deleted pod Failed before it was gone: entry removed by R2" : 'the entry expired');
  if (byR2) {
    assertHookRemovedEntry(scenario, failover, 'R2');
    return;
  }
  assertWaitedForExpiry(scenario, failover);
  assertHookLeftPeeringAlone(scenario, failover, hook, false);
}

/** The entry stayed until kopf counted it dead, and the standby led only then. */
function assertWaitedForExpiry(scenario: KopfScenario, failover: KopfFailover): void {
  const { deadline } = lastEntry(scenario.peering, scenario.leaderId, failover.removed.at);
  assert.ok(deadline !== undefined, "the old leader's entry was recorded");
  // kopf's lastseen and the watch's arrival are both this machine's clock.
  assert.ok(failover.removed.at >= deadline, `the entry went (${failover.removed.at}) only once it had expired (${deadline})`);
  assert.ok(failover.became >= deadline, `the standby led (${failover.became}) only once the entry had expired (${deadline})`);
}

/**
 * A hook removed the leader's entry by `rule`: its LeaderLockReleased Event on
 * the old leader's pod (neither kopf nor any other writer records one), before
 * the entry would have expired; the standby led right after.
 */
function assertHookRemovedEntry(scenario: KopfScenario, failover: KopfFailover, rule: 'R1' | 'R2'): void {
  const { recording, peering, leaderId } = scenario;
  assert.equal(entryReleasedBy(recording), rule, `a LeaderLockReleased Event (${rule}) on ${LEADER} for KopfPeering/${kopfPeering.name}`);
  assert.equal(peeringReleaseLines(recording).filter((line) => /^released|SIGTERM: released/.test(line.msg)).length, 1, 'one hook released the entry, once');
  const { deadline } = lastEntry(peering, leaderId, failover.removed.at);
  assert.ok(deadline !== undefined && failover.removed.at < deadline, `the entry went (${failover.removed.at}) before it would have expired (${deadline})`);
  assert.ok(failover.became - failover.removed.at < 5_000, `the standby led (${failover.became}) right after the entry went (${failover.removed.at})`);
}

/**
 * The leader deleted while its operator exits at once on SIGTERM, without
 * kopf's cleanup (a process that crashes while stopping): its entry stays.
 * Without leaderhook the standby waits for it to expire; with it, the old
 * pod's hook gets its SIGTERM once the operator container has stopped, well
 * before the deadline, and removes the entry by R1. With the pod held
 * Terminating by a finalizer until the standby leads, the same: kopf's entry
 * does not name the pod object, and R1 needs only the pod's deletion and its
 * operator stopped.
 */
async function crashedExit(t: TestContext, hook: boolean, { heldTerminating = false } = {}): Promise<void> {
  const scenario = await setUp(t, hook, ['--exit-on-sigterm']);
  const failover = await deleteLeader(scenario, 120_000, { heldTerminating });
  await finish(scenario);
  const { recording } = scenario;
  printTimeline(
    t,
    `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader exits on SIGTERM without cleanup${heldTerminating ? ', its pod held Terminating' : ''}`,
    kopfMarks(scenario, failover, hook),
    failover.deleteIssued,
    out,
  );
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - failover.deleteIssued) / 1000).toFixed(2)} s after the delete`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  assert.ok(logOf(recording, LEADER, 'exiting without cleanup'), 'the old leader exited on SIGTERM');
  assert.equal(logOf(recording, LEADER, 'stopped'), undefined, "the old leader skipped kopf's cleanup");
  if (hook) assertHookRemovedEntry(scenario, failover, 'R1');
  else assertWaitedForExpiry(scenario, failover);
}

/**
 * The leader failed by its kubelet (activeDeadlineSeconds, set once it leads)
 * while it ignores SIGTERM: SIGKILL after its 2 s grace period, the pod Failed
 * and never deleted, the entry never removed by kopf. The deadline is set
 * right after a keep-alive of the leader's entry, so that the entry outlives
 * the kill by far. Without leaderhook the standby waits for the entry to
 * expire; with it, the standby's hook removes it by R2 once the pod is Failed.
 */
async function failedLeader(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUp(t, hook, ['--ignore-sigterm'], { terminationGracePeriodSeconds: 2 });
  const { namespace, recording } = scenario;
  const deadlineSet = await failLeaderByDeadline(scenario);
  const failover = await standbyTakesOver(scenario, deadlineSet, 120_000);
  await finish(scenario);
  printTimeline(
    t,
    `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader failed by its kubelet`,
    kopfMarks(scenario, failover, hook, 'activeDeadlineSeconds set'),
    deadlineSet,
    out,
  );
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - deadlineSet) / 1000).toFixed(2)} s after activeDeadlineSeconds was set`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  const failed = await core.readNamespacedPod({ name: LEADER, namespace });
  assert.equal(failed.status?.phase, 'Failed');
  assert.equal(failed.status?.reason, 'DeadlineExceeded');
  assert.equal(failed.metadata?.deletionTimestamp, undefined, 'the failed leader was never deleted');
  if (hook) assertHookRemovedEntry(scenario, failover, 'R2');
  else assertWaitedForExpiry(scenario, failover);
}

describe('kopf-operator (kopf peering: KopfPeering entries by priority, identity POD_ID)', () => {
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    kubectl(['apply', '--server-side', '-f', 'test/operators/manifests/kopf-peering-crds.yaml']);
    kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/kopfpeerings.kopf.dev', 'crd/clusterkopfpeerings.kopf.dev']);
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  test('without leaderhook (control): the leader pod deleted, kopf removes its own entry, the standby leads at once', (t) => cleanExit(t, false));
  test('with leaderhook: the leader pod deleted, the same; the hook removes nothing', (t) => cleanExit(t, true));
  test('without leaderhook (control): the leader SIGKILLed at the end of its grace period, the standby leads only once the entry has expired', (t) =>
    killedExit(t, false));
  test("with leaderhook: the leader SIGKILLed, R1 too late; the standby's hook removes the entry by R2 if it reads the pod Failed before it is gone, else the same wait", (t) =>
    killedExit(t, true));
  test('without leaderhook (control): the leader exits on SIGTERM without cleanup, the standby leads only once the entry has expired', (t) =>
    crashedExit(t, false));
  test('with leaderhook: the leader exits on SIGTERM without cleanup, its hook removes the entry (R1) and the standby leads at once', (t) =>
    crashedExit(t, true));
  test('without leaderhook (control): the same with the leader pod held Terminating, the standby leads only once the entry has expired', (t) =>
    crashedExit(t, false, { heldTerminating: true }));
  test('with leaderhook: the same with the leader pod held Terminating, its hook removes the entry (R1) while the pod object is Terminating', (t) =>
    crashedExit(t, true, { heldTerminating: true }));
  test('without leaderhook (control): the leader failed by its kubelet, never deleted, the standby leads only once the entry has expired', (t) =>
    failedLeader(t, false));
  test("with leaderhook: the leader failed by its kubelet, the standby's hook removes the entry (R2) and the standby leads", (t) => failedLeader(t, true));
});
