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
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Lease } from '@kubernetes/client-node';
import {
  assertBefore,
  assertOneLeaderAtEveryHeartbeat,
  backedOffMs,
  failoverTimeoutMs,
  heartbeats,
  loggedBy,
  logOf,
  mark,
  operatorStatus,
  printTimeline,
  type Shape,
  setUpOperator,
  waitForRecorded,
  waitForSteadyLeader,
} from '../support/failover.ts';
import { core } from '../support/kube.ts';

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
  const lock = 'lfl-operator-lock';
  const heartbeatName = `${lock}-heartbeat`;
  const { namespace, recording } = await setUp(t, 'lfl-operator', shape);

  const { leader, standby } = await waitForSteadyLeader(recording, heartbeatName);
  if (shape === 'bare-pods') {
    const tried = logOf(recording, standby, 'trying');
    assert.ok(tried, `standby ${standby} logged "trying"`);
    // The delete lands anywhere in the standby's 16 s retry cycle, as it would in the field.
    const waitMs = tried.at + backedOffMs + Math.random() * 16_000 - Date.now();
    if (waitMs > 0) await sleep(waitMs);
  }
  const leaderPod = recording.podNow.get(leader);
  assert.ok(leaderPod?.metadata?.uid, `leader pod ${leader} was observed`);
  const lockObject = await core.readNamespacedConfigMap({ name: lock, namespace });
  assert.deepEqual(
    lockObject.metadata?.ownerReferences?.map(({ apiVersion, kind, name, uid, controller }) => ({
      apiVersion,
      kind,
      name,
      uid,
      controller: controller ?? false,
    })),
    [{ apiVersion: 'v1', kind: 'Pod', name: leader, uid: leaderPod.metadata.uid, controller: false }],
    'the lock has exactly one ownerReference, the leader pod, without the controller flag',
  );

  const deleteIssued = Date.now();
  await core.deleteNamespacedPod({ name: leader, namespace });

  const newLock = await waitForRecorded(
    recording,
    'a new lock ConfigMap owned by another pod',
    async () =>
      recording.configMaps.find(
        (event) => event.type === 'ADDED' && event.object.metadata?.name === lock && event.object.metadata.ownerReferences?.[0]?.name !== leader,
      ),
    failoverTimeoutMs,
  );
  const newLeader = newLock.object.metadata?.ownerReferences?.[0]?.name ?? '';
  await waitForRecorded(
    recording,
    'the new leader to log "became leader" and write a heartbeat',
    async () => logOf(recording, newLeader, 'became leader') && heartbeats(recording, heartbeatName).some((beat) => beat.holder === newLeader),
    failoverTimeoutMs,
  );
  await waitForRecorded(
    recording,
    'the old leader pod to be gone',
    async () => recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader),
    failoverTimeoutMs,
  );
  await sleep(1000); // more heartbeats of the new leader, under observation
  await recording.stop();
  assert.deepEqual(recording.errors, []);

  const exited = recording.pods.find((event) => event.object.metadata?.name === leader && operatorStatus(event.object)?.state?.terminated);
  const podGone = recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader);
  const lockGone = recording.configMaps.find((event) => event.type === 'DELETED' && event.object.metadata?.name === lock);
  const stopping = logOf(recording, leader, 'stopping');
  const stopped = logOf(recording, leader, 'stopped');
  const beats = heartbeats(recording, heartbeatName);
  const lastOld = beats.filter((beat) => beat.holder === leader).at(-1);
  const firstNew = beats.find((beat) => beat.holder === newLeader);
  const became = logOf(recording, newLeader, 'became leader');
  const newLeaderPod = recording.podNow.get(newLeader);

  printTimeline(
    t,
    shape === 'deployment' ? 'lfl-operator' : 'lfl-operator (bare pods, standby backed off)',
    [
      ...mark('delete issued', deleteIssued),
      ...mark('old leader logged "stopping" (SIGTERM)', stopping?.at),
      ...mark('old leader wrote its last heartbeat', lastOld?.at),
      ...mark('old leader logged "stopped"', stopped?.at),
      ...mark('old container seen exited (watch)', exited?.at),
      ...mark('old pod object gone (watch)', podGone?.at),
      ...mark('lock ConfigMap gone (watch)', lockGone?.at),
      ...mark(`new lock created by ${newLeader} (watch)`, newLock.at),
      ...mark('new leader logged "became leader"', became?.at),
      ...mark('new leader wrote its first heartbeat', firstNew?.at),
      ...recording.logs
        // operator-lib's own lines up to the win, from 20 s before the delete: its backoff, retry by retry.
        .filter(
          (line) =>
            line.pod === newLeader &&
            line.at > deleteIssued - 20_000 &&
            line.at < (became?.at ?? Number.POSITIVE_INFINITY) &&
            String(line.fields.logger).endsWith('/leader') &&
            line.fields.error === undefined,
        )
        .map((line) => ({ label: `  new leader, operator-lib: ${JSON.stringify(line.msg)}`, at: line.at })),
    ],
    deleteIssued,
  );
  t.diagnostic(
    `new leader ${newLeader} is ${loggedBy(recording, 'trying').some((line) => line.pod === newLeader && line.at < deleteIssued) ? 'the standby that was waiting' : 'the replacement pod the Deployment created'}`,
  );

  // The GC path, in order: the container stops, the pod object goes, then
  // (only then) the lock, then a standby creates the next one.
  assertBefore({ label: 'delete issued', at: deleteIssued }, { label: '"stopping"', at: stopping?.at });
  assertBefore({ label: '"stopping"', at: stopping?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'last heartbeat of the old leader', at: lastOld?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'container exited', at: exited?.rv }, { label: 'pod object gone', at: podGone?.rv });
  assertBefore({ label: 'pod object gone', at: podGone?.rv }, { label: 'lock ConfigMap gone', at: lockGone?.rv });
  assertBefore({ label: 'lock ConfigMap gone', at: lockGone?.rv }, { label: 'new lock created', at: newLock.rv });
  assertBefore({ label: '"stopped" of the old leader', at: stopped?.at }, { label: '"became leader" of the new leader', at: became?.at });
  assert.notEqual(newLeader, leader);
  assert.equal(newLock.object.metadata?.ownerReferences?.length, 1);
  assert.equal(newLock.object.metadata?.ownerReferences?.[0]?.uid, newLeaderPod?.metadata?.uid, 'the new lock is owned by the new leader pod (UID)');
  assert.deepEqual(
    [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
    [leader, newLeader],
    'two pods ever logged "became leader": the old leader, then the new one',
  );
  assertOneLeaderAtEveryHeartbeat(
    beats,
    recording.configMaps.filter((event) => event.object.metadata?.name === lock),
    (cm) => cm?.metadata?.ownerReferences?.[0]?.name,
    [leader, newLeader],
  );
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
    const lock = 'lease-operator-lock';
    const heartbeatName = `${lock}-heartbeat`;
    const { namespace, recording } = await setUp(t, 'lease-operator', 'deployment');

    const { leader } = await waitForSteadyLeader(recording, heartbeatName);
    const lease = await waitForRecorded(
      recording,
      'the lease',
      async () => recording.leases.filter((event) => event.object.metadata?.name === lock).at(-1)?.object,
      10_000,
    );
    const holderOf = (l: V1Lease | undefined): string | undefined => l?.spec?.holderIdentity?.replace(/_[^_]*$/, '');
    assert.equal(holderOf(lease), leader, `lease holderIdentity ${lease.spec?.holderIdentity} is the leader's hostname_uuid`);

    const deleteIssued = Date.now();
    await core.deleteNamespacedPod({ name: leader, namespace });

    const acquired = await waitForRecorded(
      recording,
      'another pod to hold the lease',
      async () =>
        recording.leases.find(
          (event) => event.object.metadata?.name === lock && event.at > deleteIssued && holderOf(event.object) && holderOf(event.object) !== leader,
        ),
      failoverTimeoutMs,
    );
    const newLeader = holderOf(acquired.object) ?? '';
    await waitForRecorded(
      recording,
      'the new leader to log "became leader" and write a heartbeat',
      async () => logOf(recording, newLeader, 'became leader') && heartbeats(recording, heartbeatName).some((beat) => beat.holder === newLeader),
      failoverTimeoutMs,
    );
    await waitForRecorded(
      recording,
      'the old leader pod to be gone',
      async () => recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader),
      failoverTimeoutMs,
    );
    await sleep(1000);
    await recording.stop();
    assert.deepEqual(recording.errors, []);

    const exited = recording.pods.find((event) => event.object.metadata?.name === leader && operatorStatus(event.object)?.state?.terminated);
    const podGone = recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader);
    const stopping = logOf(recording, leader, 'stopping');
    const stopped = logOf(recording, leader, 'stopped');
    const beats = heartbeats(recording, heartbeatName);
    const lastOld = beats.filter((beat) => beat.holder === leader).at(-1);
    const firstNew = beats.find((beat) => beat.holder === newLeader);
    const became = logOf(recording, newLeader, 'became leader');
    const lastRenewal = recording.leases.filter((event) => event.object.metadata?.name === lock && holderOf(event.object) === leader).at(-1)?.object.spec;
    const lastRenewedAt = lastRenewal?.renewTime ? new Date(lastRenewal.renewTime).getTime() : undefined;
    const acquireTime = acquired.object.spec?.acquireTime ? new Date(acquired.object.spec.acquireTime).getTime() : undefined;

    printTimeline(
      t,
      'lease-operator',
      [
        ...mark('delete issued', deleteIssued),
        ...mark('old leader logged "stopping" (SIGTERM)', stopping?.at),
        ...mark('old leader wrote its last heartbeat', lastOld?.at),
        ...mark('old leader logged "stopped"', stopped?.at),
        ...mark('old container seen exited (watch)', exited?.at),
        ...mark('old pod object gone (watch)', podGone?.at),
        ...mark('lease last renewed by the old leader (renewTime)', lastRenewedAt),
        ...mark(
          `lease expired (renewTime + ${lastRenewal?.leaseDurationSeconds} s)`,
          lastRenewedAt === undefined ? undefined : lastRenewedAt + (lastRenewal?.leaseDurationSeconds ?? 0) * 1000,
        ),
        ...mark(`lease acquired by ${newLeader} (acquireTime)`, acquireTime),
        ...mark('lease holder change seen (watch)', acquired.at),
        ...mark('new leader logged "became leader"', became?.at),
        ...mark('new leader wrote its first heartbeat', firstNew?.at),
      ],
      deleteIssued,
    );
    t.diagnostic(
      `new leader ${newLeader} is ${loggedBy(recording, 'trying').some((line) => line.pod === newLeader && line.at < deleteIssued) ? 'the standby that was waiting' : 'the replacement pod the Deployment created'}`,
    );

    assertBefore({ label: 'delete issued', at: deleteIssued }, { label: '"stopping"', at: stopping?.at });
    assertBefore({ label: '"stopping"', at: stopping?.at }, { label: '"stopped"', at: stopped?.at });
    assertBefore({ label: 'last heartbeat of the old leader', at: lastOld?.at }, { label: '"stopped"', at: stopped?.at });
    assertBefore({ label: 'container exited', at: exited?.rv }, { label: 'pod object gone', at: podGone?.rv });
    assertBefore({ label: '"stopped" of the old leader', at: stopped?.at }, { label: '"became leader" of the new leader', at: became?.at });
    // Without ReleaseOnCancel the old leader never hands the lease back: the
    // new holder takes it over from the old one, it never sees it empty.
    assert.ok(
      recording.leases.filter((event) => event.object.metadata?.name === lock).every((event) => holderOf(event.object)),
      'the lease always names a holder (no release on cancel)',
    );
    assert.notEqual(newLeader, leader);
    assert.deepEqual(
      [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
      [leader, newLeader],
      'two pods ever logged "became leader": the old leader, then the new one',
    );
    assertOneLeaderAtEveryHeartbeat(
      beats,
      recording.leases.filter((event) => event.object.metadata?.name === lock),
      holderOf,
      [leader, newLeader],
    );
  });
});
