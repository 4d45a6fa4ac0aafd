/**
 * The admission side of leaderhook installed from deploy/, on the real API
 * server:
 * - a workload applied with kubectl gets the warnings its pods would get (the
 *   ReplicaSet controller drops the pods' own), and is stored unchanged;
 * - a webhook outage never leaves an operator worse off than without
 *   leaderhook (deploy/mutatingwebhookconfiguration.yaml). With the webhook
 *   scaled to 0:
 * - in a `required` namespace, a Deployment whose operator relies on the
 *   webhook for POD_NAME gets FailedCreate and no pod at all (none can
 *   crash-loop); once the webhook is back, its ReplicaSet's own retries create
 *   the pods, injected, and one of them leads, with nobody acting;
 * - in a `required` namespace, an operator that sets POD_NAME itself is
 *   created uninjected and fails over through the garbage collector;
 * - in an `enabled` namespace, pods are always created (uninjected).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { OPERATOR_CONTAINER, operatorManifest } from '../support/operators.ts';
import { scaleWebhook } from '../support/faults.ts';
import { apps, connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import {
  createOperatorNamespace,
  INJECTION_LABEL,
  installLeaderhook,
  kubectl,
  kubectlWithWarnings,
  readLflLock,
  REQUIRED_INJECTION_LABEL,
} from '../support/leaderhook.ts';

connectTestCluster();

const SYSTEM = 'leaderhook-system';
const lflHolder = async (namespace: string) => (await readLflLock(namespace))?.holder;
const INJECTED = 'leaderhook.io/injected';

async function operatorPods(namespace: string): Promise<V1Pod[]> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: 'app.kubernetes.io/name=lfl-operator' });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
}

describe('admission: workload warnings, and webhook outages that leave no operator worse off', () => {
  let uninstall: (() => Promise<void>) | undefined;
  const namespaces: TestNamespace[] = [];

  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    for (const ns of namespaces) await ns.cleanup();
    await uninstall?.();
  });

  test('kubectl apply of a Deployment prints the warnings its pods get, and the Deployment is stored as applied', async () => {
    const ns = await createTestNamespace('e2e-warn', INJECTION_LABEL);
    namespaces.push(ns);
    const deployment = operatorManifest('lfl-operator', {});
    deployment.metadata = { ...deployment.metadata, namespace: ns.name };
    deployment.spec.replicas = 0;
    deployment.spec.template.spec = { ...deployment.spec.template.spec!, terminationGracePeriodSeconds: 0 };
    const applied = kubectlWithWarnings(['apply', '-f', '-'], JSON.stringify(deployment));
    assert.deepEqual(applied.warnings, ['leaderhook: terminationGracePeriodSeconds 0s -> 10s (floor: the release hook needs time after the operator stops)']);
    const stored = await apps.readNamespacedDeployment({ name: 'lfl-operator', namespace: ns.name });
    assert.equal(stored.spec?.template.spec?.terminationGracePeriodSeconds, 0, 'warnings only: the workload is not patched');
    assert.equal(stored.spec?.template.spec?.initContainers, undefined);
    // kubectl sends no request for an unchanged object: change a label to make it an UPDATE
    deployment.metadata = { ...deployment.metadata, labels: { ...deployment.metadata?.labels, 'leaderhook.test/updated': 'yes' } };
    const again = kubectlWithWarnings(['apply', '-f', '-'], JSON.stringify(deployment));
    assert.equal(again.warnings.length, 1, 'an update warns as well');
    const clean = operatorManifest('lfl-operator', {});
    clean.metadata = { ...clean.metadata, name: 'clean', namespace: ns.name };
    clean.spec.replicas = 0;
    assert.deepEqual(kubectlWithWarnings(['apply', '-f', '-'], JSON.stringify(clean)).warnings, [], 'nothing to say, nothing said');
    // The ReplicaSets the Deployment controller writes are never sent (matchConditions: not controller-owned).
    await waitFor(
      'the Deployment controller to create both ReplicaSets',
      async () => (await apps.listNamespacedReplicaSet({ namespace: ns.name })).items.length >= 2,
      60_000,
    );
    const reviewed = kubectl(['-n', SYSTEM, 'logs', '-l', 'app.kubernetes.io/component=webhook', '--tail=-1'])
      .split('\n')
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as { namespace?: string; kind?: string }];
        } catch {
          return [];
        }
      })
      .filter((line) => line.namespace === ns.name)
      .map((line) => line.kind);
    assert.ok(reviewed.includes('Deployment'), `the webhook reviewed the Deployments: ${reviewed.join(', ')}`);
    assert.ok(!reviewed.includes('ReplicaSet'), `a controller-owned ReplicaSet was sent to the webhook: ${reviewed.join(', ')}`);
  });

  test('required: refused while down, healed when back; pods that set POD_NAME always run; enabled: always created', async (t) => {
    const needsWebhook = await createOperatorNamespace('e2e-req', REQUIRED_INJECTION_LABEL);
    const ownPodName = await createOperatorNamespace('e2e-req-own', REQUIRED_INJECTION_LABEL);
    const enabled = await createOperatorNamespace('e2e-enabled', INJECTION_LABEL);
    namespaces.push(needsWebhook, ownPodName, enabled);

    await scaleWebhook(0);
    const downAt = Date.now();
    const since = (at: number) => `${((Date.now() - at) / 1000).toFixed(1)}s`;
    t.diagnostic('webhook scaled to 0, no webhook pod left');

    // Which pods the Fail entry's matchConditions refuse, by dry-run creates.
    const probe = (name: string, change: (pod: V1Pod) => void) => {
      const { metadata, spec } = operatorManifest('lfl-operator', { withoutPodNameEnv: true }).spec.template;
      const pod: V1Pod = { metadata: { ...metadata, name }, spec: spec! };
      change(pod);
      return core.createNamespacedPod({ namespace: needsWebhook.name, dryRun: 'All', body: pod }).then(
        () => 'created',
        (error: unknown) => `refused: ${(error as Error).message}`,
      );
    };
    assert.match(await probe('lacks-pod-name', () => {}), /^refused:[\s\S]*require-pod-name\.leaderhook\.io/);
    assert.equal(
      await probe('sets-pod-name', (p) => {
        p.spec!.containers[0]!.env = [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }];
      }),
      'created',
    );
    assert.equal(
      await probe('opted-out-by-annotation', (p) => {
        p.metadata!.annotations = { 'leaderhook.io/inject': 'false' };
      }),
      'created',
    );
    assert.equal(
      await probe('opted-out-by-label', (p) => {
        p.metadata!.labels = { ...p.metadata!.labels, 'leaderhook.io/inject': 'false' };
      }),
      'created',
    );

    await apps.createNamespacedDeployment({ namespace: ownPodName.name, body: operatorManifest('lfl-operator', {}) });
    await apps.createNamespacedDeployment({ namespace: enabled.name, body: operatorManifest('lfl-operator', {}) });

    // Pods that set POD_NAME are never refused: both run uninjected and one leads.
    const ownLeader = await waitFor('a leader among the pods that set POD_NAME', () => lflHolder(ownPodName.name), 120_000);
    const own = await operatorPods(ownPodName.name);
    assert.equal(own.length, 2);
    for (const pod of own) assert.equal(pod.metadata?.annotations?.[INJECTED], undefined, `${pod.metadata?.name} uninjected`);
    t.diagnostic(`${since(downAt)} required namespace, POD_NAME set: ${ownLeader} leads, uninjected`);

    // In an enabled namespace pods are always created, as they were without leaderhook.
    await waitFor(
      'the enabled namespace to have its pods, uninjected',
      async () => {
        const pods = await operatorPods(enabled.name);
        return pods.length === 2 && pods.every((p) => p.metadata?.annotations?.[INJECTED] === undefined);
      },
      60_000,
    );

    // The garbage collector stays the fallback for the uninjected leader.
    await core.deleteNamespacedPod({ name: ownLeader, namespace: ownPodName.name });
    const ownNext = await waitFor(
      'a new leader after the uninjected leader is deleted (GC path)',
      async () => {
        const holder = await lflHolder(ownPodName.name);
        return holder && holder !== ownLeader ? holder : undefined;
      },
      120_000,
    );
    t.diagnostic(`${since(downAt)} uninjected failover through GC: ${ownLeader} -> ${ownNext}`);

    // Created last, so that its ReplicaSet's retries (exponential backoff from
    // 5 ms) have not spaced out far when the webhook comes back.
    const refusedFrom = Date.now();
    await apps.createNamespacedDeployment({ namespace: needsWebhook.name, body: operatorManifest('lfl-operator', { withoutPodNameEnv: true }) });
    const refused = await waitFor(
      'FailedCreate of the pods that rely on the webhook',
      async () => {
        const events = await core.listNamespacedEvent({ namespace: needsWebhook.name });
        return events.items.find((e: CoreV1Event) => e.reason === 'FailedCreate' && e.involvedObject.kind === 'ReplicaSet');
      },
      60_000,
    );
    assert.match(refused.message ?? '', /require-pod-name\.leaderhook\.io/, 'refused by the Fail entry, naming it');
    t.diagnostic(`${since(downAt)} FailedCreate: ${refused.message}`);

    await new Promise((resolve) => setTimeout(resolve, 5_000));
    assert.deepEqual(await operatorPods(needsWebhook.name), [], 'no pod that would crash-loop without POD_NAME was created');
    t.diagnostic(`outage lasted ${since(downAt)}, pods refused for ${since(refusedFrom)}; bringing the webhook back`);
    await scaleWebhook(2);
    const backAt = Date.now();

    const healed = await waitFor(
      'the refused Deployment to have its pods, injected, and one leader',
      async () => {
        const pods = await operatorPods(needsWebhook.name);
        const holder = await lflHolder(needsWebhook.name);
        if (pods.length !== 2 || !pods.every((p) => p.metadata?.annotations?.[INJECTED]) || !holder) return undefined;
        return { pods, holder };
      },
      30_000,
    );
    t.diagnostic(`${since(backAt)} after the webhook was back: ${healed.holder} leads, both pods injected, nobody acted`);
    for (const pod of healed.pods) {
      const restarts = pod.status?.containerStatuses?.find((s) => s.name === OPERATOR_CONTAINER)?.restartCount ?? 0;
      assert.equal(restarts, 0, `${pod.metadata?.name}: the operator never crash-looped`);
    }
  });
});
