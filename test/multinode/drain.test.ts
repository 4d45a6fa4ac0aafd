/**
 * `kubectl drain` of the leader's node, the failover a cluster upgrade
 * brings, on a cluster of three nodes (test/cluster/up.sh --nodes 3), with
 * and without leaderhook, for the leader-for-life and the Lease operator.
 *
 * The drained node holds both operators' leaders (with and without
 * leaderhook) and one of the webhook's two replicas; the standbys run on the
 * other nodes. The drain evicts through the Eviction API, so the webhook's
 * PodDisruptionBudget is honoured while its pod moves: every replacement pod
 * of the opted-in namespaces is created injected, each old leader frees its
 * lock by R1 on its SIGTERM, a pod on another node leads, and at every
 * heartbeat exactly one process writes (the split-brain check). Without
 * leaderhook the same drain goes through the garbage collector (lock) or the
 * Lease's expiry, and no hook acts.
 *
 * Run: test/cluster/in-netns.sh node --test test/multinode/drain.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { annotations } from '../../src/annotations.ts';
import { finishRecording, loggedBy, releaseEvents, waitForRecorded } from '../support/recording.ts';
import { waitForTakeover } from '../support/takeover.ts';
import { connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { INJECTION_LABEL, installLeaderhook, REQUIRED_INJECTION_LABEL } from '../support/leaderhook.ts';
import { leadersOn, webhookPodsOn, webhookReady } from '../support/node-leaders.ts';
import { clusterNodes, drain, fewerNodesThan, uncordon } from '../support/nodes.ts';

connectTestCluster();

const INJECTED = annotations.injected;
describe('kubectl drain of the leader node, on three nodes', { skip: fewerNodesThan(3) }, () => {
  const nodes = fewerNodesThan(3) ? [] : clusterNodes();
  // Not node 1, so that the drained node is one that joined: every node is one like the others.
  const drained = nodes[1]?.name ?? '';
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    uncordon(drained);
    await uninstall?.();
  });

  test('both operators, with and without leaderhook: R1 frees each lock with leaderhook, a pod on another node leads, no pod is created uninjected while the webhook moves', async (t: TestContext) => {
    await webhookPodsOn(drained, 1);
    const cases = await leadersOn(t, drained, 'mn-drain', ['lfl-operator', 'lease-operator']);

    const outcome = await drain(drained);
    const drainOutput = outcome.lines.map((l) => l.text).join('\n');
    assert.equal(outcome.code, 0, `kubectl drain ${drained} evicted every pod:\n${drainOutput}`);

    const report: string[] = [`drain of ${drained}: ${((outcome.endedAt - outcome.startedAt) / 1000).toFixed(1)} s`];
    for (const c of cases) {
      const { recording, namespace } = c.scenario;
      const { leader } = c;
      const taken = await waitForTakeover(recording, c.lock, leader, outcome.startedAt);
      const newLeader = c.lock.holderOf(taken.object) ?? '';
      await waitForRecorded(
        recording,
        `${newLeader} to log "became leader"`,
        async () => loggedBy(recording, 'became leader').some((line) => line.pod === newLeader),
        120_000,
      );
      const newLeaderNode = (await core.readNamespacedPod({ namespace, name: newLeader })).spec?.nodeName;
      assert.notEqual(newLeaderNode, drained, `${namespace}: the new leader ${newLeader} runs on another node`);
      const released = releaseEvents(recording, leader);
      if (c.withLeaderhook) {
        assert.equal(releaseEvents(recording, leader, 'R1').length, 1, `${namespace}: the evicted leader ${leader} freed its lock by R1`);
        // Every pod the ReplicaSet created while the webhook moved was injected.
        const created = recording.pods
          .filter((event) => event.type === 'ADDED' && new Date(event.object.metadata?.creationTimestamp ?? 0).getTime() >= outcome.startedAt - 1000)
          .map((event) => event.object);
        assert.ok(created.length >= 1, `${namespace}: the ReplicaSet created a replacement pod`);
        for (const pod of created) assert.ok(pod.metadata?.annotations?.[INJECTED], `${namespace}: replacement ${pod.metadata?.name} was created injected`);
      } else {
        assert.deepEqual(released, [], `${namespace}: no hook acted without leaderhook`);
      }
      const evicted = recording.pods.find((event) => event.object.metadata?.name === leader && event.object.metadata?.deletionTimestamp);
      const from = evicted?.at ?? outcome.startedAt;
      const who = newLeader === c.standby ? 'the standby' : 'the replacement pod';
      report.push(
        `${c.label}: leader ${leader} evicted +${((from - outcome.startedAt) / 1000).toFixed(2)} s, ` +
          `${released.length > 0 ? `released by ${/\((R\d):/.exec(released[0]?.object.message ?? '')?.[1]} +${((released[0]!.at - from) / 1000).toFixed(2)} s, ` : ''}` +
          `${who} ${newLeader} on ${newLeaderNode} leads +${((taken.at - from) / 1000).toFixed(2)} s after the eviction`,
      );
    }
    const webhookAfter = await webhookReady(2);
    assert.ok(
      webhookAfter.every((pod) => pod.spec?.nodeName !== drained),
      'both webhook replicas run off the drained node',
    );
    for (const c of cases) await finishRecording(c.scenario.recording);
    for (const line of report) t.diagnostic(line);
  });
  test('a node holding both webhook replicas: the PDB holds the drain until one runs elsewhere; no pod created uninjected or refused meanwhile', async (t: TestContext) => {
    uncordon(drained);
    await webhookPodsOn(drained, 2);
    const namespaces: { mode: 'enabled' | 'required'; namespace: TestNamespace }[] = [
      { mode: 'enabled', namespace: await createTestNamespace('mn-drain-enabled', INJECTION_LABEL) },
      { mode: 'required', namespace: await createTestNamespace('mn-drain-required', REQUIRED_INJECTION_LABEL) },
    ];
    t.after(async () => {
      for (const { namespace } of namespaces) await namespace.cleanup();
    });

    const created: { mode: string; at: number; injected: boolean; error?: string }[] = [];
    let creating = true;
    // Pods that are created and stored but never scheduled: admission is what is tested.
    const load = (async () => {
      while (creating) {
        for (const { mode, namespace } of namespaces) {
          const at = Date.now();
          try {
            const pod = await core.createNamespacedPod({
              namespace: namespace.name,
              body: {
                metadata: { generateName: 'probe-' },
                spec: { schedulingGates: [{ name: 'leaderhook.test/never' }], containers: [{ name: 'app', image: 'leaderhook.local/pause:3.10' }] },
              },
            });
            created.push({ mode, at, injected: Boolean(pod.metadata?.annotations?.[INJECTED]) });
          } catch (error) {
            created.push({ mode, at, injected: false, error: (error as Error).message.split('\n')[0] });
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();

    let outcome: Awaited<ReturnType<typeof drain>>;
    try {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      outcome = await drain(drained);
      await webhookReady(2);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    } finally {
      creating = false;
      await load;
    }
    const output = outcome.lines.map((l) => `+${((l.at - outcome.startedAt) / 1000).toFixed(1)} s ${l.text}`).join('\n');
    assert.equal(outcome.code, 0, `kubectl drain ${drained} evicted every pod:\n${output}`);
    const refusals = outcome.lines.filter((l) => /disruption budget/.test(l.text));
    assert.ok(refusals.length >= 1, `the webhook's PodDisruptionBudget refused an eviction while no other replica ran:\n${output}`);
    const during = created.filter((c) => c.at >= outcome.startedAt);
    for (const mode of ['enabled', 'required']) {
      const own = during.filter((c) => c.mode === mode);
      assert.ok(own.length >= 10, `pods were created in the ${mode} namespace during the drain (${own.length})`);
      const failures = own.filter((c) => !c.injected);
      assert.deepEqual(
        failures.map((c) => `+${((c.at - outcome.startedAt) / 1000).toFixed(1)} s ${c.error ?? 'created uninjected'}`),
        [],
        `${mode}: every pod created during the drain was injected`,
      );
    }
    const webhookAfter = await webhookReady(2);
    assert.ok(
      webhookAfter.every((pod) => pod.spec?.nodeName !== drained),
      'both webhook replicas run off the drained node',
    );
    t.diagnostic(
      `drain of ${drained} with both webhook replicas: ${((outcome.endedAt - outcome.startedAt) / 1000).toFixed(1)} s, ${refusals.length} evictions refused by the PDB (first +${((refusals[0]!.at - outcome.startedAt) / 1000).toFixed(1)} s, last +${((refusals.at(-1)!.at - outcome.startedAt) / 1000).toFixed(1)} s)`,
    );
    t.diagnostic(
      `pods created during the drain: ${during.filter((c) => c.mode === 'enabled').length} enabled, ${during.filter((c) => c.mode === 'required').length} required; all injected`,
    );
  });
});
