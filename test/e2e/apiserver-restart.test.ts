/**
 * The hooks must outlive the API server. With leaderhook installed from
 * deploy/ and a leader-for-life operator running, the local cluster's
 * kube-apiserver is killed (SIGKILL by its PID), stays down for a few seconds and is
 * started again by test/cluster/up.sh, which restarts only what is not
 * running. Once the kubelet acts on the API again, no hook container has
 * restarted, nothing was released, and deleting the leader is still
 * released by R1.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { operatorManifest, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { clusterProcessFaultsUnavailable, killAndRestartApiServer, waitForKubeletToAct } from '../support/faults.ts';
import { apps, connectTestCluster, core, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { createOperatorNamespace, INJECTION_LABEL, installLeaderhook, readLflLock } from '../support/leaderhook.ts';

connectTestCluster();

const lflHolder = async (namespace: string) => (await readLflLock(namespace))?.holder;

const hookRestarts = (pod: V1Pod) => pod.status?.initContainerStatuses?.find((s) => s.name === RELEASE_HOOK_CONTAINER)?.restartCount ?? 0;

async function operatorPods(namespace: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace, labelSelector: 'app.kubernetes.io/name=lfl-operator' })).items.filter(
    (p) => !p.metadata?.deletionTimestamp,
  );
}

describe('the kube-apiserver restarts while the hooks watch', { skip: clusterProcessFaultsUnavailable() ?? false }, () => {
  let uninstall: (() => Promise<void>) | undefined;
  let ns: TestNamespace;

  before(async () => {
    uninstall = await installLeaderhook();
    ns = await createOperatorNamespace('e2e-apirestart', INJECTION_LABEL);
  });
  after(async () => {
    await ns?.cleanup();
    await uninstall?.();
  });

  test('no hook restarts, and a later delete is still released by R1', async (t) => {
    await apps.createNamespacedDeployment({ namespace: ns.name, body: operatorManifest('lfl-operator', { withoutPodNameEnv: true }) });
    const leader = await waitFor('a leader', () => lflHolder(ns.name), 120_000);
    await waitFor('both pods running', async () => (await operatorPods(ns.name)).filter((p) => p.status?.phase === 'Running').length === 2, 120_000);

    const stoppedAt = await killAndRestartApiServer();
    t.diagnostic(`kube-apiserver down for ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s, back up`);
    // The operators may exit on the outage and be restarted: a "later" delete is one the kubelet can act on.
    await waitForKubeletToAct(ns.name);
    const settled = await waitFor(
      'both operator pods Ready again, and a leader',
      async () => {
        const pods = await operatorPods(ns.name);
        const ready = pods.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
        const owner = await lflHolder(ns.name);
        return ready.length === 2 && owner ? { pods, owner } : undefined;
      },
      120_000,
      500,
    );
    t.diagnostic(`recovered ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s after the kill; leader before ${leader}, now ${settled.owner}`);
    for (const pod of settled.pods) assert.equal(hookRestarts(pod), 0, `${pod.metadata?.name}: the hook outlived the outage`);
    const releasesSoFar = (await core.listNamespacedEvent({ namespace: ns.name })).items.filter((e) => e.reason === 'LeaderLockReleased');
    assert.deepEqual(
      releasesSoFar.map((e) => e.message),
      [],
      'the outage freed nothing',
    );
    const current = settled.owner;

    const deletedAt = Date.now();
    await core.deleteNamespacedPod({ name: current, namespace: ns.name });
    const released = await waitFor(
      'an R1 release by the deleted leader',
      async () =>
        (await core.listNamespacedEvent({ namespace: ns.name })).items.find(
          (e) => e.reason === 'LeaderLockReleased' && e.involvedObject.name === current && /\(R1:/.test(e.message ?? ''),
        ),
      60_000,
    );
    const next = await waitFor(
      'a new leader',
      async () => {
        const owner = await lflHolder(ns.name);
        return owner && owner !== current ? owner : undefined;
      },
      120_000,
    );
    t.diagnostic(`${((Date.now() - deletedAt) / 1000).toFixed(1)} s after the delete ${next} leads; ${released.message}`);
  });
});
