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
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { operatorManifest, RELEASE_HOOK_CONTAINER } from '../support/failover.ts';
import { apps, broughtOwnCluster, clusterStateDir, core, type TestNamespace, waitFor } from '../support/kube.ts';
import { createOperatorNamespace, INJECTION_LABEL, installLeaderhook, readLflLock } from '../support/leaderhook.ts';

const lflHolder = async (namespace: string) => (await readLflLock(namespace))?.holder;
const repo = join(import.meta.dirname, '../..');

const hookRestarts = (pod: V1Pod) => pod.status?.initContainerStatuses?.find((s) => s.name === RELEASE_HOOK_CONTAINER)?.restartCount ?? 0;

async function operatorPods(namespace: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace, labelSelector: 'app.kubernetes.io/name=lfl-operator' })).items.filter(
    (p) => !p.metadata?.deletionTimestamp,
  );
}

/** A pod that only has to start, restricted-compliant. */
function probePod(name: string): V1Pod {
  return {
    metadata: { name, labels: { 'leaderhook.io/inject': 'false' } },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'pause',
          image: 'leaderhook.local/pause:3.10',
          imagePullPolicy: 'Never',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  };
}

const pidFile = join(clusterStateDir, 'pids', 'kube-apiserver.pid');

describe('the kube-apiserver restarts while the hooks watch', { skip: broughtOwnCluster || !existsSync(pidFile) ? 'needs the local cluster' : false }, () => {
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

    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /kube-apiserver/, `${pidFile} names the running kube-apiserver`);
    const stoppedAt = Date.now();
    // killed, as a crash or an OOM kill would: a SIGTERM'd kube-apiserver drains for a minute first
    process.kill(pid, 'SIGKILL');
    // gone, or a zombie nobody reaps (the machine's init may not): either way it serves nothing
    const exited = () => !existsSync(`/proc/${pid}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    await waitFor('kube-apiserver to exit', async () => exited(), 60_000, 100);
    // long enough for every hook's watch to fail and back off
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    execFileSync('bash', [join(repo, 'test/cluster/up.sh')], { stdio: ['ignore', 'ignore', 'pipe'] });
    t.diagnostic(`kube-apiserver down for ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s, back up`);

    await waitFor('the API server to answer', () => core.listNamespacedPod({ namespace: ns.name }), 60_000, 250);
    // The kubelet's own watches back off for a while after the API server died
    // (up to ~90 s here), and the operators may exit on the outage and be
    // restarted: a "later" delete is one the kubelet can act on.
    await core.createNamespacedPod({ namespace: ns.name, body: probePod('kubelet-probe') });
    await waitFor(
      'the kubelet to start a new pod again',
      async () => (await core.readNamespacedPod({ name: 'kubelet-probe', namespace: ns.name })).status?.phase === 'Running',
      240_000,
      500,
    );
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
