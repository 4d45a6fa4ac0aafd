/**
 * kopf peering entries (docs/design.md#kopf-peering-entries) against the real
 * API server and RBAC: the hook, as the pod's service account under
 * deploy/operator-rbac and deploy/operator-rbac-kopf, removes an entry under
 * its own pod's UID on R1, and a finished pod's entry on R2; it never removes
 * an entry under a pod name, of a running pod, or of a pod it cannot find.
 * Pods live on a Node object no kubelet serves (harness.ts); test/e2e/kopf-operator.test.ts
 * runs the real kopf.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KopfPeering, Pod } from '../../../src/kube/types.ts';
import { connectTestCluster } from '../../support/kube.ts';
import { apiRequest } from '../../support/raw-api.ts';
import {
  createFakeNode,
  createKopfPeering,
  createNamespace,
  createPod,
  deleteNode,
  deletePod,
  ensureKopfPeeringCrds,
  events,
  getKopfPeering,
  grantKopfPeering,
  type HookUnderTest,
  kopfOperatorSpec,
  type LogLine,
  setPodStatus,
  sleep,
  startHook,
  type TestNamespace,
  waitFor,
} from './harness.ts';

connectTestCluster();

const entryIds = (p: KopfPeering) =>
  Object.entries(p.status ?? {})
    .filter(([, e]) => e !== null)
    .map(([id]) => id)
    .sort();
const linesWith = (h: HookUnderTest, pred: (l: LogLine) => boolean) => h.logs.filter(pred);

describe('kopf peering entries on a real cluster', { concurrency: 1 }, () => {
  let node: string;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    await ensureKopfPeeringCrds();
    node = await createFakeNode();
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    await deleteNode(node);
  });

  async function namespace(prefix: string, kopfGrant = true): Promise<TestNamespace> {
    const ns = await createNamespace(prefix);
    cleanups.push(() => ns.cleanup());
    if (kopfGrant) await grantKopfPeering(ns);
    return ns;
  }
  async function hook(ns: TestNamespace, pod: Pod): Promise<HookUnderTest> {
    const h = await startHook(ns, pod);
    cleanups.push(() => h.stop());
    await h.releaser.ready;
    return h;
  }
  const kopfPod = (ns: TestNamespace, name: string, from: 'metadata.uid' | 'metadata.name' = 'metadata.uid') =>
    createPod(ns.name, name, node, { spec: kopfOperatorSpec(from) });

  describe('R1: the own entry, once the operator has stopped', () => {
    it("removes the entry under the pod's UID, as kopf's clean exit would, and no other", async () => {
      const ns = await namespace('lh-kopf-r1');
      const own = await kopfPod(ns, 'kopf-0');
      const ownUid = own.metadata?.uid as string;
      await createKopfPeering(ns.name, 'op', { [ownUid]: 100, 'other-peer': 99 });
      const h = await hook(ns, own);
      await deletePod(ns.name, 'kopf-0', 30);
      const result = await h.releaser.onTerminate();
      assert.equal(result.decision.release, true, JSON.stringify(result.decision));
      assert.deepEqual(result.released, ['KopfPeering/op']);
      assert.deepEqual(entryIds(await getKopfPeering(ns.name, 'op')), ['other-peer']);
      const ev = await waitFor('LeaderLockReleased event', async () =>
        (await events(ns.name, 'LeaderLockReleased')).find((e) => e.involvedObject.name === 'kopf-0'),
      );
      assert.match(ev.message ?? '', /KopfPeering\/op \(R1/);
    });

    it('removes nothing when the own pod is not being deleted (only the hook restarts)', async () => {
      const ns = await namespace('lh-kopf-r1-nodel');
      const own = await kopfPod(ns, 'kopf-0');
      const before = await createKopfPeering(ns.name, 'op', { [own.metadata?.uid as string]: 100 });
      const h = await hook(ns, own);
      const result = await h.releaser.onTerminate();
      assert.equal(!result.decision.release && result.decision.refusal, 'notBeingDeleted');
      assert.equal((await getKopfPeering(ns.name, 'op')).metadata?.resourceVersion, before.metadata?.resourceVersion);
    });

    it('must not remove: POD_ID is the pod name, which a pod elsewhere may carry too', async () => {
      const ns = await namespace('lh-kopf-r1-name');
      const own = await kopfPod(ns, 'kopf-0', 'metadata.name');
      const before = await createKopfPeering(ns.name, 'op', { 'kopf-0': 100 });
      const h = await hook(ns, own);
      assert.ok(
        linesWith(h, (l) => /fieldRef metadata\.name, not the pod's UID/.test(l.msg)).length === 1,
        'the start says once why kopf entries are left alone',
      );
      await deletePod(ns.name, 'kopf-0', 30);
      const result = await h.releaser.onTerminate();
      assert.equal(result.decision.release, true);
      assert.deepEqual(result.released, []);
      assert.equal((await getKopfPeering(ns.name, 'op')).metadata?.resourceVersion, before.metadata?.resourceVersion);
    });

    it('removes nothing without the opt-in Role, and says why', async () => {
      const ns = await namespace('lh-kopf-r1-norbac', false);
      const own = await kopfPod(ns, 'kopf-0');
      const before = await createKopfPeering(ns.name, 'op', { [own.metadata?.uid as string]: 100 });
      const h = await hook(ns, own);
      await deletePod(ns.name, 'kopf-0', 30);
      const result = await h.releaser.onTerminate();
      assert.deepEqual(result.released, []);
      assert.deepEqual(result.failed, []);
      assert.ok(linesWith(h, (l) => l.rule === 'R1' && /may not list KopfPeering objects/.test(l.msg)).length === 1);
      assert.equal((await getKopfPeering(ns.name, 'op')).metadata?.resourceVersion, before.metadata?.resourceVersion);
    });
  });

  describe("R2: a finished pod's entry, from a standby's hook", () => {
    const released = (h: HookUnderTest) => linesWith(h, (l) => l.rule === 'R2' && l.lock === 'KopfPeering/op' && /^released lock/.test(l.msg));
    /** A standby's hook over a peering whose leader `kopf-0` runs; resolves once the hook has looked at the leader's entry. */
    async function standbyOver(prefix: string) {
      const ns = await namespace(prefix);
      const standby = await kopfPod(ns, 'kopf-1');
      const leader = await kopfPod(ns, 'kopf-0');
      await setPodStatus(ns.name, 'kopf-0', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      const leaderUid = leader.metadata?.uid as string;
      await createKopfPeering(ns.name, 'op', { [leaderUid]: 100, [standby.metadata?.uid as string]: 99 });
      const h = await hook(ns, standby);
      await waitFor('the hook looked at the leader entry', async () => linesWith(h, (l) => l.identity === leaderUid && /entry kept$/.test(l.msg)).length > 0);
      return { ns, h, leaderUid, standbyUid: standby.metadata?.uid as string };
    }
    async function keptAfterLook(ns: TestNamespace, h: HookUnderTest, leaderUid: string, looks: number) {
      await waitFor('the hook looked again', async () => linesWith(h, (l) => l.identity === leaderUid && /entry kept$/.test(l.msg)).length >= looks);
      await sleep(500);
      return entryIds(await getKopfPeering(ns.name, 'op')).includes(leaderUid);
    }

    it('removes the entry once its pod ends Failed with every container terminated, and only it', async () => {
      const { ns, h, leaderUid, standbyUid } = await standbyOver('lh-kopf-r2');
      assert.equal(released(h).length, 0, 'nothing while the leader runs');
      await setPodStatus(ns.name, 'kopf-0', 'Failed', 'Evicted');
      await waitFor('entry removed by the hook', async () => !entryIds(await getKopfPeering(ns.name, 'op')).includes(leaderUid));
      assert.deepEqual(entryIds(await getKopfPeering(ns.name, 'op')), [standbyUid]);
      await waitFor('the release logged', async () => released(h).length >= 1);
      const all = await waitFor('LeaderLockReleased Events on both pods', async () => {
        const e = await events(ns.name, 'LeaderLockReleased');
        return e.length >= 2 ? e : undefined;
      });
      assert.ok(all.some((e) => e.involvedObject.name === 'kopf-0' && /KopfPeering op \(R2: kopf entry/.test(e.message ?? '')));
      assert.equal(released(h).length, 1, 'released once');
    });

    it('must not remove: the pod is Failed while a container still runs', async () => {
      const { ns, h, leaderUid } = await standbyOver('lh-kopf-r2-live');
      await setPodStatus(ns.name, 'kopf-0', 'Failed', 'Evicted', { setup: 'terminated', leaderhook: 'terminated', manager: 'running' });
      assert.ok(await keptAfterLook(ns, h, leaderUid, 2), 'the entry stays');
      assert.equal(released(h).length, 0);
    });

    it('never R3: an entry whose pod is gone, or not in the namespace, is left to kopf', async () => {
      const { ns, h, leaderUid } = await standbyOver('lh-kopf-r2-gone');
      await deletePod(ns.name, 'kopf-0', 0);
      // an entry of a UID no pod here has, added after the delete: the hook looks at it
      const current = await getKopfPeering(ns.name, 'op');
      const stranger = '0d6f1f7e-0000-4000-8000-000000000000';
      await apiRequest('PUT', `/apis/kopf.dev/v1/namespaces/${ns.name}/kopfpeerings/op`, {
        ...current,
        status: { ...current.status, [stranger]: { priority: 1, lifetime: 60, lastseen: new Date().toISOString() } },
      });
      await waitFor(
        'the hook looked at both entries',
        async () =>
          linesWith(h, (l) => l.identity === stranger && /entry left to kopf$/.test(l.msg)).length > 0 &&
          linesWith(h, (l) => l.identity === leaderUid && /entry left to kopf$/.test(l.msg)).length > 0,
      );
      await sleep(500);
      const ids = entryIds(await getKopfPeering(ns.name, 'op'));
      assert.ok(ids.includes(leaderUid) && ids.includes(stranger), `entries kept: ${ids.join(', ')}`);
      assert.equal(released(h).length, 0);
    });

    it('removes the entry of a pod the real kubelet fails for activeDeadlineSeconds', async (t) => {
      const realNode = process.env.NODE_NAME ?? 'leaderhook-node';
      const nodeReady = await apiRequest<{ status?: { conditions?: { type: string; status: string }[] } }>('GET', `/api/v1/nodes/${realNode}`)
        .then((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        .catch(() => false);
      if (!nodeReady) {
        t.skip(`node ${realNode} is not Ready`);
        return;
      }
      const ns = await namespace('lh-kopf-r2-kubelet');
      const standby = await kopfPod(ns, 'kopf-1');
      const leader = await createPod(ns.name, 'kopf-0', realNode, {
        spec: { ...kopfOperatorSpec('metadata.uid'), activeDeadlineSeconds: 4, terminationGracePeriodSeconds: 2, initContainers: [] },
      });
      const leaderUid = leader.metadata?.uid as string;
      await createKopfPeering(ns.name, 'op', { [leaderUid]: 100, [standby.metadata?.uid as string]: 99 });
      const h = await hook(ns, standby);
      await waitFor('entry removed after the deadline', async () => !entryIds(await getKopfPeering(ns.name, 'op')).includes(leaderUid), 90_000, 100);
      const failed = await apiRequest<Pod>('GET', `/api/v1/namespaces/${ns.name}/pods/kopf-0`);
      assert.equal(failed.status?.phase, 'Failed');
      assert.equal(failed.status?.reason, 'DeadlineExceeded');
      await waitFor('the release logged', async () => released(h).length >= 1);
      const finished = failed.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
      const releasedAt = new Date(released(h)[0]?.time as number);
      t.diagnostic(
        `kopf R2 real kubelet (DeadlineExceeded): container finished ${finished}, entry removed ${releasedAt.toISOString()} (${((releasedAt.getTime() - Date.parse(finished as string)) / 1000).toFixed(1)} s later; kopf would have waited until lastseen + 60 s)`,
      );
    });
  });
});
