/**
 * A crash is not a stop: when the leader's operator container crashes and
 * the kubelet restarts it, the restarted operator reclaims its own lock
 * (operator-lib adopts a lock owned by its pod name), so the hook must free
 * nothing (DESIGN §4, "Never release because a container crashed"). With
 * leaderhook installed from deploy/, the leader's operator exits 1 after a
 * few seconds (`--crash-after`); through its restart the lock keeps its owner
 * and its UID, no release is recorded, the hook itself is not restarted, and
 * the standby never leads.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { applyOperatorRbac, OPERATOR_CONTAINER, operatorManifest, RELEASE_HOOK_CONTAINER } from '../support/failover.ts';
import { apiStatus, apps, core, createTestNamespace, type TestNamespace, waitFor } from '../support/kube.ts';
import { grantReleaseHook, INJECTION_LABEL, installLeaderhook } from '../support/leaderhook.ts';

const LOCK = 'lfl-operator-lock';

async function lockOwner(namespace: string): Promise<{ name: string; uid: string; lockUid: string } | undefined> {
  try {
    const cm = await core.readNamespacedConfigMap({ name: LOCK, namespace });
    const owner = cm.metadata?.ownerReferences?.[0];
    return owner && !cm.metadata?.deletionTimestamp ? { name: owner.name, uid: owner.uid, lockUid: cm.metadata?.uid as string } : undefined;
  } catch (error) {
    if (apiStatus(error) === 404) return undefined;
    throw error;
  }
}

const restarts = (pod: V1Pod, container: string) =>
  [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((s) => s.name === container)?.restartCount ?? 0;

describe('the leader crashes and is restarted by the kubelet', () => {
  let uninstall: (() => Promise<void>) | undefined;
  let ns: TestNamespace;

  before(async () => {
    uninstall = await installLeaderhook();
    ns = await createTestNamespace('e2e-crash', { ...INJECTION_LABEL, 'pod-security.kubernetes.io/enforce': 'restricted' });
    await applyOperatorRbac(ns.name);
    await grantReleaseHook(ns.name, 'test-operator');
  });
  after(async () => {
    await ns?.cleanup();
    await uninstall?.();
  });

  test('nothing is released and nobody else leads: the restarted operator keeps its lock', async (t) => {
    await apps.createNamespacedDeployment({
      namespace: ns.name,
      body: operatorManifest('lfl-operator', { withoutPodNameEnv: true, extraArgs: ['--crash-after=8s'] }),
    });
    const first = await waitFor('a leader', () => lockOwner(ns.name), 120_000);
    t.diagnostic(`leader ${first.name}; its operator exits 1 after 8 s`);

    // Follow the lock until the leader's operator has crashed and runs again.
    const owners = new Set<string>();
    const restarted = await waitFor(
      "the leader's operator restarted and running again",
      async () => {
        const owner = await lockOwner(ns.name);
        owners.add(owner ? `${owner.name}/${owner.uid}/${owner.lockUid}` : 'no lock');
        const pod = await core.readNamespacedPod({ name: first.name, namespace: ns.name });
        const status = pod.status?.containerStatuses?.find((s) => s.name === OPERATOR_CONTAINER);
        return restarts(pod, OPERATOR_CONTAINER) >= 1 && status?.state?.running ? pod : undefined;
      },
      120_000,
      200,
    );
    // a few seconds of the restarted operator leading
    for (let i = 0; i < 15; i++) {
      const owner = await lockOwner(ns.name);
      owners.add(owner ? `${owner.name}/${owner.uid}/${owner.lockUid}` : 'no lock');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    t.diagnostic(`operator restarts: ${restarts(restarted, OPERATOR_CONTAINER)}; lock owners seen: ${[...owners].join(', ')}`);

    assert.deepEqual([...owners], [`${first.name}/${first.uid}/${first.lockUid}`], 'the same lock object, owned by the same pod, throughout');
    assert.equal(restarts(restarted, RELEASE_HOOK_CONTAINER), 0, 'the hook itself was not restarted');
    const events = await core.listNamespacedEvent({ namespace: ns.name });
    const releases = events.items.filter((e) => e.reason === 'LeaderLockReleased' || e.reason === 'LeaderLockWouldRelease');
    assert.deepEqual(
      releases.map((e) => e.message),
      [],
      'no release recorded',
    );
  });
});
