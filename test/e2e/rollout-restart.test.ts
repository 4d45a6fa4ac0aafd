/**
 * `kubectl rollout restart` of a 2-replica operator Deployment — the most
 * common failover users meet — with leaderhook installed from deploy/, for
 * the leader-for-life and the Lease operator. The rollout replaces both pods
 * one at a time; the old leader's lock must be freed by its own hook (R1,
 * on its SIGTERM), the leadership must end on a pod of the new ReplicaSet,
 * and at every heartbeat exactly the process holding the lock writes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { connectTestCluster } from '../support/kube.ts';
import { type LeaderLock, leaseLock, lflLock, setUpOperator } from '../support/operators.ts';
import { finishRecording, heartbeatWriters, releaseEvents } from '../support/recording.ts';
import { waitForSteadyLeader } from '../support/takeover.ts';
import { grantReleaseHook, INJECTION_LABEL, installLeaderhook, rolloutRestartUntilNewLeader } from '../support/leaderhook.ts';

connectTestCluster();

async function rolloutRestart<L>(t: TestContext, operator: string, lock: LeaderLock<L>): Promise<void> {
  const scenario = await setUpOperator(t, {
    prefix: `e2e-rollout-${operator === 'lfl-operator' ? 'lfl' : 'lease'}`,
    operator,
    options: { shape: 'deployment', withoutPodNameEnv: true },
    labels: INJECTION_LABEL,
    prepare: (namespace) => grantReleaseHook(namespace, 'test-operator'),
  });
  const { recording } = scenario;
  const { leader } = await waitForSteadyLeader(recording, lock.heartbeat);
  const issued = Date.now();
  const newLeader = await rolloutRestartUntilNewLeader(scenario, operator, lock);
  const tookS = ((Date.now() - issued) / 1000).toFixed(1);
  await finishRecording(recording);

  const released = releaseEvents(recording, leader, 'R1');
  assert.equal(released.length, 1, `the old leader ${leader} freed its lock by R1 on its SIGTERM`);
  // finishRecording ran the split-brain check: one leader process at every heartbeat, never two in turns.
  const writers = heartbeatWriters(recording, lock);
  assert.equal(writers[0], leader);
  assert.equal(writers.at(-1), newLeader);
  t.diagnostic(`${operator}: rollout restart -> ${newLeader} leads ${tookS} s after it was issued; leaders in turn: ${writers.join(' -> ')}`);
  t.diagnostic(`release: ${released[0]?.object.message}`);
}

describe('kubectl rollout restart of an operator Deployment', () => {
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  test('leader-for-life (operator-lib)', (t) => rolloutRestart(t, 'lfl-operator', lflLock));
  test('Lease (controller-runtime)', (t) => rolloutRestart(t, 'lease-operator', leaseLock));
});
