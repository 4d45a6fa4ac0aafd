/**
 * A crash is not a stop: when the leader's operator container crashes and
 * the kubelet restarts it, the restarted operator reclaims its own lock
 * (operator-lib adopts a lock owned by its pod name), so the hook must free
 * nothing (docs/design.md#what-is-never-released). With
 * leaderhook installed from deploy/, the leader's operator exits 1 after a
 * few seconds (`--crash-after`); through its restart the lock keeps its owner
 * and its UID, no release is recorded, the hook itself is not restarted, and
 * the standby never leads.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { OPERATOR_CONTAINER, operatorManifest, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { apps, connectTestCluster, core, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { createOperatorNamespace, INJECTION_LABEL, installLeaderhook, readLflLock } from '../support/leaderhook.ts';

connectTestCluster();

const restarts = (pod: V1Pod, container: string) =>
  [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((s) => s.name === container)?.restartCount ?? 0;

describe('the leader crashes and is restarted by the kubelet', () => {
  let uninstall: (() => Promise<void>) | undefined;
  let ns: TestNamespace;

  before(async () => {
    uninstall = await installLeaderhook();
    ns = await createOperatorNamespace('e2e-crash', INJECTION_LABEL);
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
    const first = await waitFor('a leader', () => readLflLock(ns.name), 120_000);
    t.diagnostic(`leader ${first.holder}; its operator exits 1 after 8 s`);

    // Follow the lock until the leader's operator has crashed and runs again.
    const owners = new Set<string>();
    const restarted = await waitFor(
      "the leader's operator restarted and running again",
      async () => {
        const owner = await readLflLock(ns.name);
        owners.add(owner ? `${owner.holder}/${owner.holderUid}/${owner.uid}` : 'no lock');
        const pod = await core.readNamespacedPod({ name: first.holder, namespace: ns.name });
        const status = pod.status?.containerStatuses?.find((s) => s.name === OPERATOR_CONTAINER);
        return restarts(pod, OPERATOR_CONTAINER) >= 1 && status?.state?.running ? pod : undefined;
      },
      120_000,
      200,
    );
    // a few seconds of the restarted operator leading
    for (let i = 0; i < 15; i++) {
      const owner = await readLflLock(ns.name);
      owners.add(owner ? `${owner.holder}/${owner.holderUid}/${owner.uid}` : 'no lock');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    t.diagnostic(`operator restarts: ${restarts(restarted, OPERATOR_CONTAINER)}; lock owners seen: ${[...owners].join(', ')}`);

    assert.deepEqual([...owners], [`${first.holder}/${first.holderUid}/${first.uid}`], 'the same lock object, owned by the same pod, throughout');
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
