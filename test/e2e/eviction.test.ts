/**
 * A real kubelet eviction: the leader writes past its container's
 * ephemeral-storage limit, the kubelet's eviction manager evicts the pod,
 * and the pod object stays, terminal (Failed with reason Evicted, or
 * Succeeded when the operator exits 0 on the kubelet's SIGTERM first). Its
 * lock's owner still exists, so the garbage collector never frees it.
 *
 * Two bare pods of test/operators' lfl-operator, the leader started with
 * `--fill-disk-mib` (it writes once it leads) and a 16 Mi ephemeral-storage
 * limit, the standby without: nothing recreates the evicted pod, so the
 * standby is the only candidate.
 * - without leaderhook, the scaffold's RBAC (pods: *): operator-lib's standby
 *   deletes the leader if its status says Evicted, and the GC frees the
 *   lock; a leader that ended Succeeded is not recognised and keeps it;
 * - without leaderhook and without `pods delete`: the lock is held for as
 *   long as the evicted pod object exists: no new leader within the wait;
 * - with leaderhook, without `pods delete` (so operator-lib cannot help):
 *   the standby's hook frees the lock by R2 (the holder is Failed and every
 *   container of it terminated: it can never run again) while the evicted
 *   pod is still there, and the standby leads.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/eviction.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { lflLock } from '../support/operators.ts';
import { assertNoSplitBrain, logOf, releaseEvents } from '../support/recording.ts';
import { createLeaderAndStandby, evictableOperatorPod, type LeaderAndStandby, waitForEviction } from '../support/faults.ts';
import { connectTestCluster, core } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { installLeaderhook } from '../support/leaderhook.ts';

connectTestCluster();

/** How long the deadlock case waits to show that nothing frees the lock. */
const deadlockWaitMs = 45_000;

type Case = LeaderAndStandby;

const setUp = (prefix: string, { withLeaderhook, podDelete }: { withLeaderhook: boolean; podDelete: boolean }): Promise<Case> =>
  createLeaderAndStandby(prefix, {
    withLeaderhook,
    podDelete,
    leader: evictableOperatorPod('leader', { withLeaderhook, fillsDisk: true }),
    standby: evictableOperatorPod('standby', { withLeaderhook, fillsDisk: false }),
  });

const waitForLeaderEviction = (c: Case) => waitForEviction(c.recording, 'leader');

function lockHolder(c: Case): string | undefined {
  const last = lflLock.events(c.recording).at(-1);
  return last?.type === 'DELETED' ? undefined : lflLock.holderOf(last?.object);
}

describe('a real kubelet eviction of the leader (ephemeral-storage limit)', () => {
  let uninstall: () => Promise<void> = async () => {};
  const cases: Case[] = [];
  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    for (const c of cases) {
      await c.recording.stop();
      await c.ns.cleanup();
    }
    await uninstall();
  });

  test('with and without leaderhook, with and without RBAC that lets operator-lib delete pods', { timeout: 600_000 }, async (t) => {
    const [scaffold, noDelete, hooked] = await Promise.all([
      setUp('e2e-evict-olib', { withLeaderhook: false, podDelete: true }),
      setUp('e2e-evict-stuck', { withLeaderhook: false, podDelete: false }),
      setUp('e2e-evict-hook', { withLeaderhook: true, podDelete: false }),
    ]);
    cases.push(scaffold, noDelete, hooked);

    await Promise.all(
      [scaffold, noDelete, hooked].map(async (c) => {
        const { at, pod, message } = await waitForLeaderEviction(c);
        t.diagnostic(`${c.ns.name}: evicted (${message}); pod ${pod.status?.phase}${pod.status?.reason ? `/${pod.status.reason}` : ''}`);
        return at;
      }),
    );

    // Without leaderhook, operator-lib's own remedy: delete a leader whose status says Evicted; the GC
    // does the rest. A leader that exited 0 on the kubelet's SIGTERM ends Succeeded without that
    // reason, and operator-lib does not recognise it: then nothing frees the lock.
    const scaffoldLeader = await core.readNamespacedPod({ name: 'leader', namespace: scaffold.ns.name }).catch(() => undefined);
    const saysEvicted = scaffold.recording.pods.some((e) => e.object.metadata?.name === 'leader' && e.object.status?.reason === 'Evicted');
    if (saysEvicted) {
      await waitFor('operator-lib to delete the evicted leader, and the standby to lead', async () => lockHolder(scaffold) === 'standby', 120_000, 500);
      assert.ok(
        scaffold.recording.pods.some((e) => e.type === 'DELETED' && e.object.metadata?.name === 'leader'),
        'the evicted leader pod was deleted (by operator-lib) before the standby led',
      );
      t.diagnostic('without leaderhook, scaffold RBAC: the status said Evicted; operator-lib deleted the pod and the GC freed the lock');
    } else {
      t.diagnostic(
        `without leaderhook, scaffold RBAC: the evicted leader ended ${scaffoldLeader?.status?.phase} without reason Evicted; operator-lib's remedy does not apply`,
      );
    }

    // With leaderhook and no pods delete: R2 by the standby's hook, the evicted pod still there.
    await waitFor('the standby to lead through the hook', async () => lockHolder(hooked) === 'standby', 120_000, 500);
    const r2 = releaseEvents(hooked.recording, 'leader', 'R2');
    assert.equal(
      r2.length,
      1,
      `one R2 release of the evicted leader's lock: ${JSON.stringify(hooked.recording.events.map((e) => [e.object.reason, e.object.message]))}`,
    );
    const evictedPod = await core.readNamespacedPod({ name: 'leader', namespace: hooked.ns.name });
    assert.match(
      evictedPod.status?.phase ?? '',
      /^(Failed|Succeeded)$/,
      'the evicted pod object is still there, terminal: the hook, not the GC, freed the lock',
    );
    t.diagnostic(`with leaderhook: ${r2[0]?.object.message}`);

    // Without leaderhook and without pods delete: nothing frees it.
    await new Promise((resolve) => setTimeout(resolve, deadlockWaitMs));
    for (const stuck of saysEvicted ? [noDelete] : [noDelete, scaffold]) {
      assert.equal(
        lockHolder(stuck),
        'leader',
        `${stuck.ns.name}: without leaderhook the evicted pod keeps the lock (${deadlockWaitMs / 1000} s and counting)`,
      );
      assert.equal(logOf(stuck.recording, 'standby', 'became leader'), undefined, `${stuck.ns.name}: and the standby never leads`);
    }

    for (const c of saysEvicted ? [scaffold, hooked] : [hooked]) assertNoSplitBrain(c.recording, lflLock);
  });
});
