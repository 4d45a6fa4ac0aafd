/**
 * Baseline: how the real operators under test fail over WITHOUT leaderhook.
 *
 * Two replicas of each operator elect exactly one leader; deleting the leader
 * pod hands leadership to another pod — for the leader-for-life operator
 * through the garbage collector (pod object gone, then the lock ConfigMap,
 * then a standby's next Create), for the Lease operator once the 15 s lease
 * has run out. Everything is observed, nothing is simulated: watches on pods,
 * ConfigMaps and Leases, the operators' own JSON logs, and the heartbeat the
 * leader writes every 100 ms. The tests assert the order of events and that
 * every heartbeat came from the pod holding the lock at that moment; the
 * durations are printed (and written to LEADERHOOK_BASELINE_OUT as JSON
 * lines when set), never asserted: docs/baseline.md records them.
 *
 * Needs the operator images (test/operators/build.sh). Run inside the cluster's
 * network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/baseline.test.ts
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { connectTestCluster } from '../support/kube.ts';
import { leaseLock, lflLock, type Shape, setUpOperator } from '../support/operators.ts';
import { finishRecording, lockGone, operatorExited, podGone } from '../support/recording.ts';
import { assertBefore, expiredLeaseMarks, mark, newLeaderMarks, oldLeaderMarks, operatorLibRetryMarks, printTimeline } from '../support/timeline.ts';
import { assertHandover, assertNewLock, assertOrderlyStop, failOverLease, failOverLfl, whoLeads } from '../support/takeover.ts';

connectTestCluster();

/**
 * A namespace of its own (restricted Pod Security: the manifests must pass it
 * as they are), recorded from before the operator's first object exists.
 */
function setUp(t: TestContext, operator: string, shape: Shape) {
  return setUpOperator(t, { prefix: operator.replace(/-operator$/, '-baseline'), operator, options: { shape } });
}

/**
 * The leader-for-life scenario: one leader, its pod deleted, a new leader
 * through the GC path. With `shape: 'bare-pods'` the standby waits until its
 * backoff has reached the cap before the delete, and must be the new leader.
 */
async function lflFailover(t: TestContext, shape: Shape): Promise<void> {
  const scenario = await setUp(t, 'lfl-operator', shape);
  const { recording } = scenario;
  const takeover = await failOverLfl(scenario, shape);
  const { leader, standby, deleteIssued, newLeader } = takeover;
  await finishRecording(recording);

  printTimeline(
    t,
    shape === 'deployment' ? 'lfl-operator' : 'lfl-operator (bare pods, standby backed off)',
    [
      ...oldLeaderMarks(recording, lflLock, leader, deleteIssued),
      ...mark('old container seen exited (watch)', operatorExited(recording, leader)?.at),
      ...mark('old pod object gone (watch)', podGone(recording, leader)?.at),
      ...mark('lock ConfigMap gone (watch)', lockGone(recording, lflLock)?.at),
      ...mark(`new lock created by ${newLeader} (watch)`, takeover.taken.at),
      ...newLeaderMarks(recording, lflLock, newLeader),
      ...operatorLibRetryMarks(recording, newLeader, deleteIssued),
    ],
    deleteIssued,
  );
  t.diagnostic(whoLeads(recording, newLeader, deleteIssued));

  // The GC path, in order: the container stops, the pod object goes, then
  // (only then) the lock, then a standby creates the next one.
  assertOrderlyStop(recording, lflLock, leader, deleteIssued);
  assertBefore({ label: 'pod object gone', at: podGone(recording, leader)?.rv }, { label: 'lock ConfigMap gone', at: lockGone(recording, lflLock)?.rv });
  assertNewLock(recording, takeover);
  assertHandover(recording, lflLock, leader, newLeader);
  if (shape === 'bare-pods') assert.equal(newLeader, standby, 'with no replacement pod, the standby that was waiting leads');
}

describe('baseline failover without leaderhook', () => {
  test('lfl-operator (operator-lib leader-for-life), Deployment: one leader, then another pod leads through the GC path', async (t) => {
    await lflFailover(t, 'deployment');
  });

  test('lfl-operator (operator-lib leader-for-life), two bare pods: the standby, backed off to 16 s, leads through the GC path', async (t) => {
    await lflFailover(t, 'bare-pods');
  });

  test('lease-operator (controller-runtime Lease): one leader, then another pod leads once the lease has expired', async (t) => {
    const scenario = await setUp(t, 'lease-operator', 'deployment');
    const { recording } = scenario;
    const takeover = await failOverLease(scenario, leaseLock);
    const { leader, deleteIssued, newLeader } = takeover;
    await finishRecording(recording);

    printTimeline(t, 'lease-operator', expiredLeaseMarks(recording, leaseLock, takeover), deleteIssued);
    t.diagnostic(whoLeads(recording, newLeader, deleteIssued));

    assertOrderlyStop(recording, leaseLock, leader, deleteIssued);
    // Without ReleaseOnCancel the old leader never hands the lease back: the
    // new holder takes it over from the old one, it never sees it empty.
    assert.ok(
      leaseLock.events(recording).every((event) => leaseLock.holderOf(event.object)),
      'the lease always names a holder (no release on cancel)',
    );
    assertHandover(recording, leaseLock, leader, newLeader);
  });
});
