/**
 * The kubelet stops until its node is NotReady, while the containers keep
 * running (containerd runs them, not the kubelet), then it is started again.
 *
 * 1. With leaderhook: nothing is released — a NotReady node proves nothing
 *    about the processes on it, and here the leader really is still running
 *    and writing heartbeats. The standby's hook says why it waits (a
 *    LeaderLockHeld Warning Event naming the holder's state), and after the
 *    kubelet is back no container has restarted and the leader still leads.
 * 2. What operator-lib does by itself when its RBAC allows `nodes get`
 *    (no leaderhook): its standby sees the leader's node NotReady, deletes
 *    the leader pod and the lock, and takes over while the old leader is
 *    still running — two processes write heartbeats as leader. The README
 *    says so; leaderhook never does this and cannot stop operator-lib from it.
 *
 * The kubelet is stopped and started again by test/support/faults.ts. Node
 * lifecycle: NotReady (Unknown) after the controller manager's
 * node-monitor-grace-period (50 s); the unreachable taint's default
 * toleration (300 s) outlasts each test, so nothing is evicted.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/node-not-ready.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lflLock, OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { assertNoSplitBrain, heartbeats, splitBrainViolations } from '../support/recording.ts';
import { createOperatorsNamespace, type OperatorsNamespace, waitForLeader } from '../support/failover-trial.ts';
import { clusterProcessFaultsUnavailable, whileNodeNotReady } from '../support/faults.ts';
import { connectTestCluster, core, rbac } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { deleteNamespaceAndWait, installLeaderhook } from '../support/leaderhook.ts';

connectTestCluster();

const suffix = Math.random().toString(16).slice(2, 8);

function restarts(ns: OperatorsNamespace): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [name, pod] of ns.recording.podNow) {
    for (const status of [...(pod?.status?.containerStatuses ?? []), ...(pod?.status?.initContainerStatuses ?? [])]) {
      counts[`${name}/${status.name}`] = status.restartCount;
    }
  }
  return counts;
}

describe('the kubelet stopped until the node is NotReady', {
  skip: clusterProcessFaultsUnavailable() ?? false,
}, () => {
  let uninstall: () => Promise<void> = async () => {};
  const namespaces: OperatorsNamespace[] = [];
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    for (const ns of namespaces) {
      await ns.recording.stop();
      await deleteNamespaceAndWait(ns.name);
    }
    await uninstall();
  });

  test('with leaderhook nothing is released, the standby says why it waits, and nothing restarts', { timeout: 480_000 }, async (t) => {
    const ns = await createOperatorsNamespace(`e2e-notready-${suffix}`, { withLeaderhook: true, operators: ['lfl-operator'] });
    namespaces.push(ns);
    const leader = await waitForLeader(ns.recording, 'lfl-operator', ns.name);
    const before = restarts(ns);

    await whileNodeNotReady(async (notReadyAt) => {
      t.diagnostic(`node NotReady; leader ${leader}`);
      const held = await waitFor(
        "the standby's hook to report why it waits",
        async () =>
          ns.recording.events.find(
            (e) =>
              e.object.reason === 'LeaderLockHeld' &&
              e.object.type === 'Warning' &&
              e.object.involvedObject?.name !== leader &&
              /notReady/.test(e.object.message ?? ''),
          ),
        180_000,
        1000,
      );
      t.diagnostic(`standby's Event after ${((held.at - notReadyAt) / 1000).toFixed(0)} s of NotReady: ${held.object.message}`);
      assert.match(held.object.message ?? '', new RegExp(`held by pod ${leader}`));
      // The leader really is still running: it keeps writing heartbeats through the API server.
      assert.ok(
        heartbeats(ns.recording, lflLock.heartbeat).some((beat) => beat.holder === leader && beat.at > notReadyAt),
        'the leader kept writing heartbeats while its node was NotReady',
      );
    });

    await waitFor(
      'the leader to write heartbeats with the kubelet back',
      async () => (heartbeats(ns.recording, lflLock.heartbeat).at(-1)?.at ?? 0) > Date.now() - 2000,
      60_000,
    );
    assert.deepEqual(
      ns.recording.events.filter((e) => e.object.reason === 'LeaderLockReleased').map((e) => e.object.message),
      [],
      'nothing was released',
    );
    assert.deepEqual(
      [...new Set(lflLock.events(ns.recording).map((e) => (e.type === 'DELETED' ? 'deleted' : lflLock.holderOf(e.object))))],
      [leader],
      'the lock named the same leader throughout and was never deleted',
    );
    assert.deepEqual([...new Set(heartbeats(ns.recording, lflLock.heartbeat).map((beat) => beat.holder))], [leader], 'only the leader ever wrote heartbeats');
    assertNoSplitBrain(ns.recording, lflLock);
    const afterwards = await waitFor(
      'the kubelet to report every container again',
      async () => {
        const counts = restarts(ns);
        return Object.keys(counts).length >= Object.keys(before).length && counts;
      },
      60_000,
    );
    for (const [container, count] of Object.entries(afterwards)) {
      if (container.endsWith(`/${OPERATOR_CONTAINER}`) || container.endsWith(`/${RELEASE_HOOK_CONTAINER}`)) {
        assert.equal(count, before[container] ?? 0, `${container} did not restart`);
      }
    }
  });

  test('operator-lib with `nodes get` deletes a NotReady leader and its lock itself: two leaders while the old one still runs', {
    timeout: 480_000,
  }, async (t) => {
    const ns = await createOperatorsNamespace(`e2e-notready-olib-${suffix}`, { withLeaderhook: false, operators: ['lfl-operator'] });
    namespaces.push(ns);
    const clusterRole = `e2e-notready-nodes-${suffix}`;
    await rbac.createClusterRole({ body: { metadata: { name: clusterRole }, rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }] } });
    t.after(async () => {
      await rbac.deleteClusterRoleBinding({ name: clusterRole }).catch(() => {});
      await rbac.deleteClusterRole({ name: clusterRole }).catch(() => {});
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: clusterRole },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
        subjects: [{ kind: 'ServiceAccount', name: 'test-operator', namespace: ns.name }],
      },
    });
    const leader = await waitForLeader(ns.recording, 'lfl-operator', ns.name);

    await whileNodeNotReady(async (notReadyAt) => {
      const takeover = await waitFor(
        "operator-lib's standby to delete the lock and take it",
        async () => lflLock.events(ns.recording).find((e) => e.at > notReadyAt - 5000 && e.type !== 'DELETED' && lflLock.holderOf(e.object) !== leader),
        120_000,
        500,
      );
      const newLeader = lflLock.holderOf(takeover.object);
      t.diagnostic(`operator-lib's standby ${newLeader} took the lock ${((takeover.at - notReadyAt) / 1000).toFixed(1)} s into NotReady`);
      const oldPod = await core.readNamespacedPod({ name: leader, namespace: ns.name });
      assert.ok(oldPod.metadata?.deletionTimestamp, `operator-lib deleted the old leader pod ${leader} (it stays Terminating: no kubelet to stop it)`);
      await waitFor(
        'heartbeats from both leaders after the takeover',
        async () => {
          const after = heartbeats(ns.recording, lflLock.heartbeat).filter((beat) => beat.rv > takeover.rv);
          return after.some((beat) => beat.holder === leader) && after.some((beat) => beat.holder === newLeader);
        },
        30_000,
        500,
      );
      const violations = splitBrainViolations(ns.recording, lflLock);
      assert.ok(
        violations.some((v) => v.kind === 'not-holder' || v.kind === 'interleaved'),
        `the split-brain checker flags operator-lib's two leaders: ${JSON.stringify(violations.map((v) => v.kind))}`,
      );
      t.diagnostic(
        `two processes wrote heartbeats as leader (${violations.length} episodes flagged): operator-lib split brain on a NotReady node whose containers still run`,
      );
    });
  });
});
