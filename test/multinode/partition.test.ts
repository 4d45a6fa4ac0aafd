/**
 * A node cut off from the API server while its kubelet and containers keep
 * running (the control plane's end of its veth pair down), on a cluster of
 * three nodes, with and without leaderhook, for both operators.
 *
 * 1. Nothing is released: a node that cannot be reached proves nothing about
 *    the processes on it. The Lease operator fails over by itself (its
 *    leader cannot renew, the Lease expires); the leader-for-life lock stays
 *    with the cut-off leader, and the standby's hook says why it waits. The
 *    documented remedy, done the safe way — the node really stopped (kubelet
 *    and every container ended), then the `node.kubernetes.io/out-of-service`
 *    taint — lets pod GC force-delete the node's pods, the lock go (the
 *    garbage collector, or a hook), and a pod on another node lead.
 * 2. The same taint while the cut-off leader still runs: pod GC deletes its
 *    pod all the same, the lock goes (the garbage collector, or R3: the
 *    holder's pod object is gone) and a second leader starts elsewhere while
 *    the first still runs on the cut-off node — two leaders at once, with
 *    leaderhook as without: the taint is only safe on a node that has really
 *    stopped. Once the node is back its kubelet stops the old pod; no hook
 *    frees the new leader's lock.
 *
 * Run: test/cluster/in-netns.sh node --test test/multinode/partition.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CoreV1Event } from '@kubernetes/client-node';
import { connectTestCluster } from '../support/kube.ts';
import { OPERATOR_CONTAINER } from '../support/operators.ts';
import { finishRecording, heartbeats, lockGone, loggedBy, podGone, splitBrainViolations, waitForRecorded } from '../support/recording.ts';
import { waitForTakeover } from '../support/takeover.ts';
import type { Observed } from '../support/recorder.ts';
import { startStoppedComponents } from '../support/faults.ts';
import { waitFor } from '../support/wait.ts';
import { installLeaderhook, kubectl } from '../support/leaderhook.ts';
import { leadersOn, type NodeLeaderCase, since } from '../support/node-leaders.ts';
import {
  type ClusterNode,
  clusterNodes,
  cutOff,
  fewerNodesThan,
  nodeReadyStatus,
  OUT_OF_SERVICE_TAINT,
  removeOutOfServiceTaint,
  runningContainersOf,
  stopNode,
} from '../support/nodes.ts';

connectTestCluster();

const released = (c: NodeLeaderCase): Observed<CoreV1Event>[] =>
  c.scenario.recording.events.filter((e) => e.type === 'ADDED' && e.object.reason === 'LeaderLockReleased');

/** The rule a release Event names ("R3"), or "no hook". */
function rule(event: Observed<CoreV1Event> | undefined): string {
  return event ? `${/\((R\d):/.exec(event.object.message ?? '')?.[1] ?? '?'} by a hook` : 'no hook';
}

/** Cuts `node` off and waits until it is NotReady; returns both times. */
async function cutOffUntilNotReady(node: ClusterNode): Promise<{ cutAt: number; notReadyAt: number }> {
  const cutAt = Date.now();
  cutOff(node);
  const notReadyAt = await waitFor(`${node.name} to turn NotReady`, async () => (await nodeReadyStatus(node.name)) !== 'True' && Date.now(), 180_000, 500);
  return { cutAt, notReadyAt };
}

/** Removes the out-of-service taint (if set) and brings the node back. */
function restore(node: ClusterNode): void {
  removeOutOfServiceTaint(node.name);
  startStoppedComponents();
}

describe('a node cut off from the API server, on three nodes', { skip: fewerNodesThan(3) }, () => {
  const nodes = fewerNodesThan(3) ? [] : clusterNodes();
  const target = nodes[2] as ClusterNode;
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  test('nothing is released while it is cut off; stopped for real and tainted out-of-service, its leaders are replaced', {
    timeout: 600_000,
  }, async (t: TestContext) => {
    const cases = await leadersOn(t, target.name, 'mn-cut', ['lfl-operator', 'lease-operator']);
    const report: string[] = [];
    let cut: { cutAt: number; notReadyAt: number } | undefined;
    try {
      cut = await cutOffUntilNotReady(target);
      const { cutAt, notReadyAt } = cut;
      report.push(`${target.name} cut off; NotReady ${since(cutAt, notReadyAt)}`);
      for (const c of cases.filter((each) => each.operator === 'lease-operator')) {
        const taken = await waitForTakeover(c.scenario.recording, c.lock, c.leader, cutAt);
        assert.deepEqual(released(c), [], `${c.label}: no hook released anything (the leader's lost the API server; the Lease expired)`);
        report.push(`${c.label}: ${c.lock.holderOf(taken.object)} leads ${since(cutAt, taken.at)} after the cut (the Lease expired), no release`);
      }
      const withHook = cases.find((c) => c.operator === 'lfl-operator' && c.withLeaderhook)!;
      const held = await waitForRecorded(
        withHook.scenario.recording,
        "the standby's hook to report why it waits",
        async () =>
          withHook.scenario.recording.events.find(
            (e) => e.object.reason === 'LeaderLockHeld' && e.object.involvedObject?.name === withHook.standby && /notReady/.test(e.object.message ?? ''),
          ),
        180_000,
      );
      assert.match(held.object.message ?? '', new RegExp(`held by pod ${withHook.leader}`));
      report.push(`${withHook.label}: standby's LeaderLockHeld ${since(notReadyAt, held.at)} after NotReady: ${held.object.message}`);
      for (const c of cases.filter((each) => each.operator === 'lfl-operator')) {
        assert.equal(lockGone(c.scenario.recording, c.lock), undefined, `${c.label}: the lock stayed while the node was cut off`);
        assert.deepEqual(released(c), [], `${c.label}: nothing was released while the node was cut off`);
      }

      // The remedy, the safe way: the node really stopped, then the taint.
      const stoppedAt = Date.now();
      stopNode(target);
      const taintedAt = Date.now();
      kubectl(['taint', 'node', target.name, OUT_OF_SERVICE_TAINT]);
      report.push(`kubelet and containers of ${target.name} stopped ${since(cutAt, stoppedAt)}; tainted out-of-service ${since(cutAt, taintedAt)}`);
      for (const c of cases.filter((each) => each.operator === 'lfl-operator')) {
        const { recording } = c.scenario;
        const gone = await waitForRecorded(recording, `pod ${c.leader} to be force-deleted`, async () => podGone(recording, c.leader), 180_000);
        const taken = await waitForTakeover(recording, c.lock, c.leader, taintedAt, 180_000);
        const newLeader = c.lock.holderOf(taken.object) ?? '';
        await waitForRecorded(
          recording,
          `${newLeader} to log "became leader"`,
          async () => loggedBy(recording, 'became leader').some((l) => l.pod === newLeader),
          120_000,
        );
        const freed = lockGone(recording, c.lock);
        const by = released(c).find((e) => e.at >= taintedAt);
        if (!c.withLeaderhook) assert.equal(by, undefined, `${c.label}: no hook acted`);
        report.push(
          `${c.label}: pod force-deleted ${since(taintedAt, gone.at)} after the taint, lock gone ${since(taintedAt, freed?.at)} (${rule(by)}${by ? '' : ': the garbage collector'}), ` +
            `${newLeader === c.standby ? 'the standby' : 'the replacement'} ${newLeader} leads ${since(taintedAt, taken.at)}`,
        );
      }
    } finally {
      restore(target);
    }
    for (const c of cases) await finishRecording(c.scenario.recording);
    for (const line of report) t.diagnostic(line);
  });

  test('tainted out-of-service while the cut-off leader still runs: a second leader while the first runs, with leaderhook as without', {
    timeout: 600_000,
  }, async (t: TestContext) => {
    const cases = await leadersOn(t, target.name, 'mn-taint', ['lfl-operator']);
    const report: string[] = [];
    const takenAt = new Map<NodeLeaderCase, number>();
    let healedAt = 0;
    try {
      const { cutAt, notReadyAt } = await cutOffUntilNotReady(target);
      const taintedAt = Date.now();
      kubectl(['taint', 'node', target.name, OUT_OF_SERVICE_TAINT]);
      report.push(`${target.name} cut off, NotReady ${since(cutAt, notReadyAt)}, tainted out-of-service at once while its containers run`);
      for (const c of cases) {
        const taken = await waitForTakeover(c.scenario.recording, c.lock, c.leader, taintedAt, 180_000);
        takenAt.set(c, taken.at);
        const newLeader = c.lock.holderOf(taken.object) ?? '';
        await waitForRecorded(
          c.scenario.recording,
          `${newLeader} to log "became leader"`,
          async () => loggedBy(c.scenario.recording, 'became leader').some((l) => l.pod === newLeader),
          120_000,
        );
        // Its pod object is gone, its process is not.
        assert.ok(podGone(c.scenario.recording, c.leader), `${c.label}: pod GC deleted the old leader's pod ${c.leader}`);
        assert.ok(
          runningContainersOf(target, c.scenario.namespace, c.leader).includes(OPERATOR_CONTAINER),
          `${c.label}: the old leader's operator still runs on ${target.name} while ${newLeader} leads`,
        );
        const freed = lockGone(c.scenario.recording, c.lock);
        const by = released(c)[0];
        report.push(
          `${c.label}: pod GC deleted ${c.leader}, its lock gone ${since(taintedAt, freed?.at)} after the taint (${rule(by)}${by ? '' : ': the garbage collector'}); ` +
            `${newLeader} leads ${since(taintedAt, taken.at)} while the old leader's operator still runs on ${target.name}: two leaders`,
        );
      }
    } finally {
      restore(target);
      healedAt = Date.now();
    }
    // The kubelet, back, finds its pods deleted and stops them.
    const stoppedAt = new Map<NodeLeaderCase, number>();
    for (const c of cases) {
      stoppedAt.set(
        c,
        await waitFor(
          `the old leader ${c.leader} to be stopped by its kubelet`,
          async () => runningContainersOf(target, c.scenario.namespace, c.leader).length === 0 && Date.now(),
          120_000,
          500,
        ),
      );
    }
    await sleep(2000);
    for (const c of cases) {
      const { recording } = c.scenario;
      await recording.stop();
      const stale = heartbeats(recording, c.lock.heartbeat).filter((beat) => beat.holder === c.leader && beat.at > (takenAt.get(c) ?? 0));
      const violations = splitBrainViolations(recording, c.lock);
      const newLock = c.lock.events(recording).filter((e) => e.at > (takenAt.get(c) ?? 0));
      // The new leader's lock is its own: no hook of the old pod deletes it.
      assert.equal(
        newLock.find((e) => e.type === 'DELETED'),
        undefined,
        `${c.label}: the new leader's lock was not deleted (the old leader's hook freed nothing of it)`,
      );
      // What a hook may free here is the old leader's lock once its pod object is gone (R3), as the garbage collector would; nothing after that.
      assert.deepEqual(
        released(c)
          .filter((e) => e.at > (takenAt.get(c) ?? 0))
          .map((e) => e.object.message),
        [],
        `${c.label}: no hook released anything once the new leader held the lock`,
      );
      if (!c.withLeaderhook) assert.deepEqual(released(c), [], `${c.label}: no hook acted`);
      report.push(
        `${c.label}: the node back, its kubelet stopped the old leader ${since(healedAt, stoppedAt.get(c))} later; heartbeats it wrote after the takeover: ${stale.length}; split-brain check: ${violations.length} violations`,
      );
    }
    for (const line of report) t.diagnostic(line);
  });
});
