/**
 * The kubelet of the leaders' node upgraded in place, a cluster upgrade's
 * last step on each node: the control plane already runs the newer minor,
 * the node's kubelet is stopped and started on it while containerd keeps the
 * containers running. To leaderhook that must be no event at all: no hook
 * restarted, nothing released, the same leaders writing; and afterwards the
 * new kubelet still stops the hook after its operator, so a deleted leader's
 * lock is freed by R1.
 *
 * Needs a cluster whose kubelet is older than its API server
 * (LEADERHOOK_KUBELET_VERSION=1.34 LEADERHOOK_KUBE_VERSION=1.35 test/cluster/up.sh,
 * with a state directory of its own; `npm run test:matrix` brings one up);
 * elsewhere it is skipped and says why.
 *
 * Run: test/cluster/in-netns.sh node --test test/e2e/kubelet-upgrade.test.ts
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { type LeaderLock, leaseLock, lflLock, type Scenario, setUpOperator } from '../support/operators.ts';
import { finishRecording, heartbeatWriters, releaseEvents } from '../support/recording.ts';
import { deleteLeader, waitForSteadyLeader } from '../support/takeover.ts';
import { connectTestCluster, core } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { grantReleaseHook, INJECTION_LABEL, installLeaderhook } from '../support/leaderhook.ts';

connectTestCluster();

const repo = join(import.meta.dirname, '..', '..');
const controlPlane = process.env.LEADERHOOK_KUBE_VERSION;
const kubeletBefore = process.env.LEADERHOOK_KUBELET_VERSION;

function kubeletUpgradeUnavailable(): string | false {
  if (!controlPlane || !kubeletBefore) return 'not the local cluster of test/cluster (its env file names both versions)';
  if (kubeletBefore === controlPlane) {
    return `the kubelet runs the API server's version (${controlPlane}): bring the cluster up with LEADERHOOK_KUBELET_VERSION set to an older minor (npm run test:matrix does)`;
  }
  return false;
}

/** Every container of the pod, sidecar included, by name: its container ID and restart count. */
const containersOf = (pod: V1Pod): Record<string, string> =>
  Object.fromEntries(
    [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].map((s) => [
      s.name,
      `${s.containerID} restarts=${s.restartCount}`,
    ]),
  );

async function containersIn(namespace: string): Promise<Record<string, Record<string, string>>> {
  const pods = await core.listNamespacedPod({ namespace });
  return Object.fromEntries(pods.items.map((pod) => [pod.metadata!.name!, containersOf(pod)]));
}

const kubeletVersionOf = async (node: string) => (await core.readNode({ name: node })).status?.nodeInfo?.kubeletVersion;

describe('the kubelet upgraded in place under running leaders', { skip: kubeletUpgradeUnavailable() }, () => {
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  test("no hook restarted, nothing released, the same leaders; then R1 still frees a deleted leader's lock", async (t) => {
    const cases: { scenario: Scenario; lock: LeaderLock<unknown>; leader: string }[] = [];
    for (const [operator, lock] of [
      ['lfl-operator', lflLock],
      ['lease-operator', leaseLock],
    ] as const) {
      const scenario = await setUpOperator(t, {
        prefix: `e2e-kubelet-upgrade-${operator === 'lfl-operator' ? 'lfl' : 'lease'}`,
        operator,
        options: { shape: 'deployment', withoutPodNameEnv: true },
        labels: INJECTION_LABEL,
        prepare: (namespace) => grantReleaseHook(namespace, 'test-operator'),
      });
      const { leader } = await waitForSteadyLeader(scenario.recording, lock.heartbeat);
      cases.push({ scenario, lock: lock as LeaderLock<unknown>, leader });
    }
    const node = (await core.readNamespacedPod({ namespace: cases[0]!.scenario.namespace, name: cases[0]!.leader })).spec!.nodeName!;
    assert.equal(await kubeletVersionOf(node), kubeletBefore, `${node} runs kubelet ${kubeletBefore} before the upgrade`);
    const before = await Promise.all(cases.map((c) => containersIn(c.scenario.namespace)));

    // up.sh without the older version restarts each kubelet on the control
    // plane's, with the same flags and state, and waits until the node is Ready.
    const upgradeStarted = Date.now();
    execFileSync('bash', [join(repo, 'test/cluster/up.sh')], {
      env: { ...process.env, LEADERHOOK_KUBELET_VERSION: controlPlane },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    // What a later up.sh of this process (a test's restart of a component) must keep.
    process.env.LEADERHOOK_KUBELET_VERSION = controlPlane;
    await waitFor(`${node} to report kubelet ${controlPlane}`, async () => (await kubeletVersionOf(node)) === controlPlane, 60_000, 500);
    const upgradedAfterS = ((Date.now() - upgradeStarted) / 1000).toFixed(1);
    // The new kubelet resyncs every pod at start and relists the runtime each
    // second: 15 s covers many of both, so a restart it caused would be seen.
    await new Promise((resolve) => setTimeout(resolve, 15_000));

    const after = await Promise.all(cases.map((c) => containersIn(c.scenario.namespace)));
    assert.deepEqual(after, before, 'every container, hook included, is the one that ran before the upgrade, never restarted');
    for (const { scenario, lock, leader } of cases) {
      assert.deepEqual(releaseEvents(scenario.recording, leader), [], `${scenario.namespace}: no hook acted on the kubelet's restart`);
      assert.deepEqual(heartbeatWriters(scenario.recording, lock), [leader], `${scenario.namespace}: ${leader} alone led throughout`);
    }
    t.diagnostic(`${node}: kubelet ${kubeletBefore} → ${controlPlane} in ${upgradedAfterS} s; no container restarted, nothing released`);

    for (const { scenario, lock, leader } of cases) {
      const { newLeader, deleteIssued, taken } = await deleteLeader(scenario, lock, leader);
      const released = releaseEvents(scenario.recording, leader, 'R1');
      assert.equal(released.length, 1, `${scenario.namespace}: after the upgrade, the deleted leader ${leader} freed its lock by R1`);
      t.diagnostic(
        `${scenario.namespace}: ${leader} deleted, freed by R1 +${released[0]!.at - deleteIssued} ms, ${newLeader} took over +${taken.at - deleteIssued} ms`,
      );
      await finishRecording(scenario.recording);
    }
  });
});
