/**
 * The release rules against the real API server, garbage collector and RBAC,
 * with the hook authenticated as the pod's service account under deploy/operator-rbac.
 * Pods whose status a rule needs live on a Node object no kubelet serves;
 * one R2 case runs on the real kubelet (activeDeadlineSeconds).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeClient } from '../../../src/kube/client.ts';
import type { Lease, Pod } from '../../../src/kube/types.ts';
import { connectTestCluster } from '../../support/kube.ts';
import {
  admin,
  configMapGone,
  createFakeNode,
  createLease,
  createLock,
  createNamespace,
  createOwnedLease,
  createPod,
  createReplicaSet,
  deleteNode,
  deletePod,
  events,
  type HookUnderTest,
  leaseGone,
  type LogLine,
  pauseGarbageCollector,
  pauseImage,
  setPodStatus,
  skipReason,
  sleep,
  startHook,
  type TestNamespace,
  waitFor,
} from './harness.ts';

connectTestCluster();

const report: string[] = [];
const note = (line: string) => {
  report.push(line);
  process.stdout.write(`# ${line}\n`);
};

function logsWith(logs: LogLine[], pred: (l: LogLine) => boolean): LogLine[] {
  return logs.filter(pred);
}

describe('release hook on a real cluster', { skip: skipReason, concurrency: 1 }, () => {
  let node: string;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    node = await createFakeNode();
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    await deleteNode(node);
    if (report.length) process.stdout.write(`\n# release hook measurements\n${report.map((l) => `#   ${l}`).join('\n')}\n`);
  });

  async function namespace(prefix: string, rules?: unknown[]): Promise<TestNamespace> {
    const ns = await createNamespace(prefix, rules);
    cleanups.push(() => ns.cleanup());
    return ns;
  }
  async function hook(ns: TestNamespace, pod: Pod, options = {}, wrap?: (c: KubeClient) => KubeClient): Promise<HookUnderTest> {
    const h = await startHook(ns, pod, options, wrap);
    cleanups.push(() => h.stop());
    return h;
  }

  describe('R1 own stop', () => {
    it('releases the own ConfigMap lock on SIGTERM while the pod is being deleted', async () => {
      const ns = await namespace('lh-r1-cm');
      const pod = await createPod(ns.name, 'op-0', node);
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod);
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const t0 = performance.now();
      const result = await h.releaser.onTerminate();
      const gone = await configMapGone(ns.name, 'op-lock');
      const latency = performance.now() - t0;
      assert.equal(result.decision.release, true, JSON.stringify(result.decision));
      assert.deepEqual(result.released, ['ConfigMap/op-lock']);
      assert.equal(gone, true);
      note(`R1 ConfigMap: SIGTERM -> lock gone ${latency.toFixed(1)} ms (onTerminate ${result.durationMs} ms incl. Event)`);
      const ev = await waitFor('LeaderLockReleased event', async () =>
        (await events(ns.name, 'LeaderLockReleased')).find((e) => e.involvedObject.name === 'op-0'),
      );
      assert.match(ev.message ?? '', /ConfigMap\/op-lock/);
      assert.ok(logsWith(h.logs, (l) => /SIGTERM: released ConfigMap\/op-lock/.test(l.msg)).length === 1, 'one log line for the release');
    });

    it('releases nothing when the own pod is not being deleted', async () => {
      const ns = await namespace('lh-r1-nodel');
      const pod = await createPod(ns.name, 'op-0', node);
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod);
      await h.releaser.ready;
      const result = await h.releaser.onTerminate();
      assert.equal(!result.decision.release && result.decision.refusal, 'notBeingDeleted');
      assert.deepEqual(result.released, []);
      assert.equal(await configMapGone(ns.name, 'op-lock'), false);
    });

    it('releases nothing when SIGTERM comes later than deadline - margin', async () => {
      const ns = await namespace('lh-r1-late');
      const pod = await createPod(ns.name, 'op-0', node);
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      // Grace 30 s; the hook's clock says 29 s have passed: inside the 2 s margin.
      const h = await hook(ns, pod, { clock: { now: () => Date.now() + 29_000 } });
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const result = await h.releaser.onTerminate();
      assert.equal(!result.decision.release && result.decision.refusal, 'pastDeadline', JSON.stringify(result.decision));
      assert.equal(await configMapGone(ns.name, 'op-lock'), false);
    });

    it('releases nothing once the grace period is over (deadline passed)', async () => {
      const ns = await namespace('lh-r1-over');
      const pod = await createPod(ns.name, 'op-0', node);
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod, { clock: { now: () => Date.now() + 60_000 } });
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const result = await h.releaser.onTerminate();
      assert.equal(!result.decision.release && result.decision.refusal, 'pastDeadline');
      assert.equal(await configMapGone(ns.name, 'op-lock'), false);
    });

    it('observe mode (pod annotation) records what it would release and releases nothing', async () => {
      const ns = await namespace('lh-r1-obs');
      const pod = await createPod(ns.name, 'op-0', node, { annotations: { 'leaderhook.io/observe': 'true' } });
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod);
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const result = await h.releaser.onTerminate();
      assert.deepEqual(result.observed, ['ConfigMap/op-lock']);
      assert.deepEqual(result.released, []);
      assert.equal(await configMapGone(ns.name, 'op-lock'), false);
      await waitFor('LeaderLockWouldRelease event', async () => (await events(ns.name, 'LeaderLockWouldRelease')).length > 0);
    });

    it('releases a Lease held by this pod to the leaderless record; never touches the node-hostname or other holders', async () => {
      const ns = await namespace('lh-r1-lease');
      const pod = await createPod(ns.name, 'op-0', node);
      await createLease(ns.name, 'op-lease', 'op-0_6f0d3c2a-1b7e-4c55-9d1e-0a1b2c3d4e5f');
      const nodeLease = await createLease(ns.name, 'hostnet-lease', `${node}_0a1b2c3d-4e5f-4c55-9d1e-6f0d3c2a1b7e`);
      const otherLease = await createLease(ns.name, 'other-lease', 'op-01_0a1b2c3d');
      const h = await hook(ns, pod);
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const t0 = performance.now();
      const result = await h.releaser.onTerminate();
      const latency = performance.now() - t0;
      assert.deepEqual(result.released, ['Lease/op-lease']);
      const kube = await admin();
      const released = await kube.getLease(ns.name, 'op-lease');
      assert.equal(released.spec?.holderIdentity ?? '', '');
      assert.equal(released.spec?.leaseDurationSeconds, 1);
      assert.equal(released.spec?.leaseTransitions, 2, 'transitions kept');
      assert.ok(Date.now() - Date.parse(released.spec?.renewTime as string) < 10_000, 'renewTime is now');
      const untouched = async (l: Lease) => (await kube.getLease(ns.name, l.metadata?.name as string)).metadata?.resourceVersion;
      assert.equal(await untouched(nodeLease), nodeLease.metadata?.resourceVersion, 'node-hostname identity untouched');
      assert.equal(await untouched(otherLease), otherLease.metadata?.resourceVersion, 'op-01 is not op-0');
      note(`R1 Lease: onTerminate ${latency.toFixed(1)} ms`);
    });

    it("never releases a Lease for a hostNetwork pod, whose hostname (and so Lease identity) is the node's", async () => {
      const ns = await namespace('lh-r1-hostnet');
      const pod = await createPod(ns.name, 'op-0', node, { spec: { hostNetwork: true } });
      const lease = await createLease(ns.name, 'op-lease', 'op-0_6f0d3c2a-1b7e-4c55-9d1e-0a1b2c3d4e5f');
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod);
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const result = await h.releaser.onTerminate();
      assert.deepEqual(result.released, ['ConfigMap/op-lock'], "the ConfigMap lock is still this pod's by UID");
      const kube = await admin();
      assert.equal((await kube.getLease(ns.name, 'op-lease')).metadata?.resourceVersion, lease.metadata?.resourceVersion, 'Lease untouched');
    });
  });

  describe('R1 for a Lease held as a hostname (docs/design.md#leases-held-by-identity)', () => {
    const uuid = '6f0d3c2a-1b7e-4c55-9d1e-0a1b2c3d4e5f';
    /** SIGTERM while the pod is being deleted; resolves with the result and whether the Lease kept its version. */
    async function terminate(ns: TestNamespace, pod: Pod, lease: Lease) {
      const h = await hook(ns, pod);
      await h.releaser.ready;
      await deletePod(ns.name, pod.metadata?.name as string, 30);
      const result = await h.releaser.onTerminate();
      const after = await (await admin()).getLease(ns.name, lease.metadata?.name as string);
      return { h, result, untouched: after.metadata?.resourceVersion === lease.metadata?.resourceVersion, after };
    }

    it('releases a Lease held as its spec.hostname (with a subdomain) when no other pod can carry that hostname', async () => {
      const ns = await namespace('lh-r1-hostname');
      const pod = await createPod(ns.name, 'op-0', node, { spec: { hostname: 'operator', subdomain: 'ops' } });
      await createPod(ns.name, 'op-1', node);
      const lease = await createLease(ns.name, 'op-lease', `operator_${uuid}`);
      const { result, after } = await terminate(ns, pod, lease);
      assert.deepEqual(result.released, ['Lease/op-lease']);
      assert.equal(after.spec?.holderIdentity ?? '', '');
    });

    it('releases a Lease held as the hostname the kubelet cuts from a name over 63 characters, when no other pod shares it', async () => {
      const ns = await namespace('lh-r1-long');
      const name = `${'operator-'.repeat(7)}0`;
      const hostname = name.slice(0, 63).replace(/[-.]+$/, '');
      assert.ok(name.length > 63 && hostname !== name);
      const pod = await createPod(ns.name, name, node);
      const lease = await createLease(ns.name, 'op-lease', `${hostname}_${uuid}`);
      const { result } = await terminate(ns, pod, lease);
      assert.deepEqual(result.released, ['Lease/op-lease']);
    });

    it('must not release: two replicas of a ReplicaSet share spec.hostname, so the identity may be the running one', async () => {
      const ns = await namespace('lh-r1-shared');
      const [leaving, staying] = await createReplicaSet(ns.name, 'op', node, 2, { hostname: 'operator' });
      assert.ok(leaving && staying);
      const lease = await createLease(ns.name, 'op-lease', `operator_${uuid}`);
      const { h, result, untouched } = await terminate(ns, leaving, lease);
      assert.ok(result.decision.release, 'R1 itself decided to release');
      assert.deepEqual(result.released, []);
      assert.ok(untouched, 'the Lease keeps its version: nothing was written');
      assert.match(result.kept.join('\n'), new RegExp(`Lease/op-lease: .*${staying.metadata?.name}`));
      const line = logsWith(h.logs, (l) => l.rule === 'R1' && l.lock === 'Lease/op-lease' && /kept/.test(l.msg))[0];
      assert.ok(line, 'one log line says why it was kept');
      assert.equal((await events(ns.name, 'LeaderLockReleased')).length, 0);
    });

    it('must not release: two pods whose names over 63 characters the kubelet cuts to the same hostname', async () => {
      const ns = await namespace('lh-r1-cut');
      const base = 'operator-'.repeat(7);
      const [a, b] = [`${base}replica-a`, `${base}replica-b`];
      const hostname = a.slice(0, 63).replace(/[-.]+$/, '');
      assert.equal(hostname, b.slice(0, 63).replace(/[-.]+$/, ''), 'both names cut to one hostname');
      const leaving = await createPod(ns.name, a, node);
      await createPod(ns.name, b, node);
      const lease = await createLease(ns.name, 'op-lease', `${hostname}_${uuid}`);
      const { result, untouched } = await terminate(ns, leaving, lease);
      assert.deepEqual(result.released, []);
      assert.ok(untouched, 'the Lease keeps its version: nothing was written');
      assert.match(result.kept.join('\n'), new RegExp(b));
    });

    it('releases once the other pod sharing the hostname has finished (every container terminated)', async () => {
      const ns = await namespace('lh-r1-shared-done');
      const pod = await createPod(ns.name, 'op-0', node, { spec: { hostname: 'operator' } });
      await createPod(ns.name, 'op-old', node, { spec: { hostname: 'operator' } });
      await setPodStatus(ns.name, 'op-old', 'Failed', 'Evicted');
      const lease = await createLease(ns.name, 'op-lease', `operator_${uuid}`);
      const { result } = await terminate(ns, pod, lease);
      assert.deepEqual(result.released, ['Lease/op-lease']);
    });
  });

  describe('R2 for a Lease held by identity (docs/design.md#r2-for-leases-held-by-identity)', () => {
    const uuid = '0a1b2c3d-4e5f-4c55-9d1e-6f0d3c2a1b7e';
    const released = (h: HookUnderTest) => logsWith(h.logs, (l) => l.rule === 'R2' && l.lock === 'Lease/op-lease' && /^released lock/.test(l.msg));
    /** A standby's hook, ready, over a Lease held as `identity` whose holder is running; then `fail` makes it finish or not. */
    async function standbyOver(prefix: string, identity: string, pods: { name: string; hostname?: string }[]) {
      const ns = await namespace(prefix);
      const standby = await createPod(ns.name, 'op-standby', node);
      for (const p of pods) {
        await createPod(ns.name, p.name, node, p.hostname ? { spec: { hostname: p.hostname } } : {});
        await setPodStatus(ns.name, p.name, 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      }
      const lease = await createLease(ns.name, 'op-lease', identity);
      const h = await hook(ns, standby);
      await h.releaser.ready;
      return { ns, h, lease };
    }
    /** Waits until the hook has looked at the Lease after the last change (its debug line), then reads the Lease. */
    async function keptAfterLook(ns: TestNamespace, h: HookUnderTest, lease: Lease, looks: number) {
      await waitFor(
        'the hook looked at the Lease again',
        async () => logsWith(h.logs, (l) => l.lock === 'Lease/op-lease' && /Lease kept$/.test(l.msg)).length >= looks,
      );
      await sleep(500);
      const after = await (await admin()).getLease(ns.name, 'op-lease');
      return after.metadata?.resourceVersion === lease.metadata?.resourceVersion;
    }

    it('writes the leaderless record once the only pod that can hold it ends Failed with every container terminated', async () => {
      const { ns, h } = await standbyOver('lh-r2-ident', `h-evicted_${uuid}`, [{ name: 'h-evicted' }]);
      await setPodStatus(ns.name, 'h-evicted', 'Failed', 'Evicted');
      const after = await waitFor('Lease released by the hook', async () => {
        const l = await (await admin()).getLease(ns.name, 'op-lease');
        return l.spec?.holderIdentity ? undefined : l;
      });
      assert.equal(after.spec?.leaseDurationSeconds, 1);
      // logged once the API server has answered the write, which can be after the test read the record
      await waitFor('the release logged', async () => released(h).length >= 1);
      const all = await waitFor('LeaderLockReleased Events on both pods', async () => {
        const e = await events(ns.name, 'LeaderLockReleased');
        return e.length >= 2 ? e : undefined;
      });
      assert.ok(all.some((e) => e.involvedObject.name === 'h-evicted' && /R2/.test(e.message ?? '')));
      assert.equal(released(h).length, 1, 'released once');
    });

    it('must not release: the finished pod shares spec.hostname with a running one, which may be the holder', async () => {
      const pods = [
        { name: 'op-a', hostname: 'operator' },
        { name: 'op-b', hostname: 'operator' },
      ];
      const { ns, h, lease } = await standbyOver('lh-r2-shared', `operator_${uuid}`, pods);
      await setPodStatus(ns.name, 'op-a', 'Failed', 'Evicted');
      assert.ok(await keptAfterLook(ns, h, lease, 2), 'the Lease keeps its version');
      assert.equal(released(h).length, 0);
    });

    it('must not release: a holder whose phase is Failed while a container still runs', async () => {
      const { ns, h, lease } = await standbyOver('lh-r2-live', `h-stuck_${uuid}`, [{ name: 'h-stuck' }]);
      await setPodStatus(ns.name, 'h-stuck', 'Failed', 'Evicted', { setup: 'terminated', leaderhook: 'terminated', manager: 'running' });
      assert.ok(await keptAfterLook(ns, h, lease, 2), 'the Lease keeps its version');
      assert.equal(released(h).length, 0);
    });

    it('never R3: a holder pod that no longer exists leaves its Lease to expire', async () => {
      const { ns, h, lease } = await standbyOver('lh-r2-gone', `h-gone_${uuid}`, [{ name: 'h-gone' }]);
      await deletePod(ns.name, 'h-gone', 0);
      await waitFor(
        'the pod is gone',
        async () =>
          (await (await admin()).getPod(ns.name, 'h-gone').then(
            () => false,
            () => true,
          )) || undefined,
      );
      // a change of the Lease makes the hook look again, now that no pod can hold it
      const kube = await admin();
      const current = await kube.getLease(ns.name, 'op-lease');
      const touched = await kube.request<Lease>({
        method: 'PUT',
        path: `/apis/coordination.k8s.io/v1/namespaces/${ns.name}/leases/op-lease`,
        body: { ...current, spec: { ...current.spec, holderIdentity: `h-gone_${uuid}-2` } },
      });
      await waitFor(
        'the hook looked at the new holder',
        async () => logsWith(h.logs, (l) => l.lock === 'Lease/op-lease' && /no pod of the namespace can carry/.test(l.msg)).length > 0,
      );
      await sleep(500);
      assert.equal((await kube.getLease(ns.name, 'op-lease')).metadata?.resourceVersion, touched.metadata?.resourceVersion);
      assert.equal(released(h).length, 0);
      assert.ok(lease);
    });
  });

  describe('R2 holder terminal', () => {
    it('releases locks of holders Failed (Evicted, Terminated, DeadlineExceeded, ProviderFailed) and Succeeded with every container terminated', async () => {
      const ns = await namespace('lh-r2');
      const standby = await createPod(ns.name, 'op-standby', node);
      const cases = [
        { pod: 'h-evicted', phase: 'Failed', reason: 'Evicted' },
        { pod: 'h-terminated', phase: 'Failed', reason: 'Terminated' },
        { pod: 'h-deadline', phase: 'Failed', reason: 'DeadlineExceeded' },
        { pod: 'h-provider', phase: 'Failed', reason: 'ProviderFailed' },
        { pod: 'h-succeeded', phase: 'Succeeded', reason: undefined },
      ];
      for (const c of cases) {
        const holder = await createPod(ns.name, c.pod, node);
        await setPodStatus(ns.name, c.pod, 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
        await createLock(ns.name, `${c.pod}-lock`, { name: c.pod, uid: holder.metadata?.uid as string });
      }
      const h = await hook(ns, standby);
      await h.releaser.ready;
      for (const c of cases) {
        const t0 = performance.now();
        await setPodStatus(ns.name, c.pod, c.phase, c.reason);
        await waitFor(`lock of ${c.pod} released`, () => configMapGone(ns.name, `${c.pod}-lock`));
        note(`R2 ${c.phase}${c.reason ? `/${c.reason}` : ''}: status written -> lock gone ${(performance.now() - t0).toFixed(0)} ms`);
      }
      // the hook logs a release once the API server has answered the delete, which can be after the test saw the lock gone
      const releaseLines = () => logsWith(h.logs, (l) => l.rule === 'R2' && /^released lock/.test(l.msg));
      await waitFor('a release logged per lock', async () => releaseLines().length >= cases.length);
      const released = await waitFor('LeaderLockReleased events on the holders and on the releasing pod', async () => {
        const all = await events(ns.name, 'LeaderLockReleased');
        return all.length >= 2 * cases.length ? all : undefined;
      });
      assert.equal(releaseLines().length, cases.length, 'one release line per lock, none repeated');
      for (const c of cases) {
        assert.ok(
          released.some((e) => e.involvedObject.name === c.pod),
          `an Event on the holder ${c.pod}`,
        );
        assert.ok(
          released.some((e) => e.involvedObject.name === 'op-standby' && e.message?.includes(`${c.pod}-lock`) && /by this pod's release hook/.test(e.message)),
          `an Event on the releasing pod for ${c.pod}-lock`,
        );
      }
    });

    it('never deletes a ConfigMap with data that a terminal holder owns: discovery sees metadata, the live read sees the data', async () => {
      const ns = await namespace('lh-r2-data');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'h-evicted', node);
      const uid = holder.metadata?.uid as string;
      await setPodStatus(ns.name, 'h-evicted', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      await createLock(ns.name, 'h-lock', { name: 'h-evicted', uid });
      const kube = await admin();
      await kube.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns.name}/configmaps`,
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'h-config', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'h-evicted', uid }] },
          data: { 'config.yaml': 'x' },
        },
      });
      const h = await hook(ns, standby);
      await h.releaser.ready;
      await setPodStatus(ns.name, 'h-evicted', 'Failed', 'Evicted');
      // the holder still exists, so the garbage collector deletes neither: only the hook could
      await waitFor('the real lock released', () => configMapGone(ns.name, 'h-lock'));
      await waitFor(
        'the data ConfigMap recognised as no lock',
        async () => logsWith(h.logs, (l) => l.lock === 'ConfigMap/h-config' && /carries data/.test(l.msg))[0],
      );
      assert.equal(await configMapGone(ns.name, 'h-config'), false, 'a ConfigMap with data is never released');
      assert.deepEqual(
        logsWith(h.logs, (l) => /^released lock/.test(l.msg)).map((l) => l.lock),
        ['ConfigMap/h-lock'],
      );
    });

    it('does not release while a container is still running, whatever the phase', async () => {
      const ns = await namespace('lh-r2-no');
      const standby = await createPod(ns.name, 'op-standby', node);
      const cases: { pod: string; phase: string; reason: string | undefined; live: Record<string, 'running'> }[] = [
        { pod: 'h-manager', phase: 'Failed', reason: 'Evicted', live: { manager: 'running' as const } },
        { pod: 'h-sidecar', phase: 'Succeeded', reason: undefined, live: { leaderhook: 'running' as const } },
        { pod: 'h-deadline', phase: 'Failed', reason: 'DeadlineExceeded', live: { manager: 'running' as const } },
      ];
      for (const c of cases) {
        const holder = await createPod(ns.name, c.pod, node);
        await createLock(ns.name, `${c.pod}-lock`, { name: c.pod, uid: holder.metadata?.uid as string });
      }
      const h = await hook(ns, standby);
      await h.releaser.ready;
      for (const c of cases) await setPodStatus(ns.name, c.pod, c.phase, c.reason, c.live);
      // Evidence that the hook read each holder in its terminal-but-running state and decided to wait.
      for (const c of cases) {
        await waitFor(
          `the hook's decision on ${c.pod}`,
          async () => logsWith(h.logs, (l) => l.holder === c.pod && l.holderState === 'terminalContainersNotTerminated' && /lock kept$/.test(l.msg))[0],
        );
        assert.equal(await configMapGone(ns.name, `${c.pod}-lock`), false, `${c.pod} kept`);
      }
      // The watch is live: once the kubelet would report everything terminated, the lock goes.
      await setPodStatus(ns.name, 'h-manager', 'Failed', 'Evicted');
      await waitFor('lock released once all containers terminated', () => configMapGone(ns.name, 'h-manager-lock'));
    });

    it('a lock re-created by someone else between decision and delete is not deleted (preconditions)', async () => {
      const ns = await namespace('lh-pre');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'h-old', node);
      const successor = await createPod(ns.name, 'h-new', node);
      await createLock(ns.name, 'op-lock', { name: 'h-old', uid: holder.metadata?.uid as string });
      let recreatedUid: string | undefined;
      const h = await hook(ns, standby, {}, (client) => ({
        ...client,
        async deleteConfigMap(nsName, name, preconditions, opts) {
          if (name === 'op-lock' && !recreatedUid) {
            // Between the hook's decision and its delete, another pod takes the lock.
            const kube = await admin();
            await kube.request({ method: 'DELETE', path: `/api/v1/namespaces/${nsName}/configmaps/${name}` });
            const cm = await createLock(nsName, name, { name: 'h-new', uid: successor.metadata?.uid as string });
            recreatedUid = cm.metadata?.uid;
          }
          return client.deleteConfigMap(nsName, name, preconditions, opts);
        },
      }));
      await h.releaser.ready;
      await setPodStatus(ns.name, 'h-old', 'Failed', 'Evicted');
      await waitFor('hook saw the lock move', async () => logsWith(h.logs, (l) => /already released or changed/.test(l.msg)).length > 0);
      const kube = await admin();
      const now = await kube.getConfigMap(ns.name, 'op-lock');
      assert.ok(recreatedUid);
      assert.equal(now.metadata?.uid, recreatedUid, 'the new lock survives');
      assert.equal(now.metadata?.ownerReferences?.[0]?.name, 'h-new');
    });
  });

  describe('R3 holder gone and R0 stale own name', () => {
    // With the garbage collector paused, a lock that goes was deleted by the
    // hook: these tests fail if the hook never deletes.
    const paused = pauseGarbageCollector();
    const whileGcPaused = { skip: paused ? false : 'needs the local cluster, whose garbage collector the test can pause' };
    const hookReleased = (h: HookUnderTest, rule: string) =>
      logsWith(h.logs, (l) => l.rule === rule && l.lock === 'ConfigMap/op-lock' && /^released lock/.test(l.msg));

    it('releases the lock of a holder that no longer exists', whileGcPaused, async () => {
      const ns = await namespace('lh-r3');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'h-gone', node);
      await createLock(ns.name, 'op-lock', { name: 'h-gone', uid: holder.metadata?.uid as string });
      const h = await hook(ns, standby);
      await h.releaser.ready;
      const latency = await paused!(async () => {
        const t0 = performance.now();
        await deletePod(ns.name, 'h-gone', 0);
        await waitFor('lock released by the hook', () => configMapGone(ns.name, 'op-lock'));
        return performance.now() - t0;
      });
      assert.equal(hookReleased(h, 'R3').length, 1, 'the hook deleted the lock itself');
      note(`R3 holder gone: force delete -> lock gone ${latency.toFixed(0)} ms (garbage collector paused: the hook deleted it)`);
    });

    it('releases the lock of a holder replaced by a new pod of the same name', whileGcPaused, async () => {
      const ns = await namespace('lh-r3-repl');
      const standby = await createPod(ns.name, 'op-standby', node);
      const old = await createPod(ns.name, 'op-1', node);
      await createLock(ns.name, 'op-lock', { name: 'op-1', uid: old.metadata?.uid as string });
      // The replacement exists before the hook starts, so its first live read finds it
      // (a hook already running would free the lock as soon as the old pod is gone).
      const h = await paused!(async () => {
        await deletePod(ns.name, 'op-1', 0);
        const replacement = await createPod(ns.name, 'op-1', node);
        assert.notEqual(replacement.metadata?.uid, old.metadata?.uid);
        const started = await hook(ns, standby);
        await started.releaser.ready;
        await waitFor('lock released by the hook', () => configMapGone(ns.name, 'op-lock'));
        return started;
      });
      const [released] = hookReleased(h, 'R3');
      assert.ok(released, 'the hook deleted the lock itself');
      assert.match(released.msg, /a pod of the same name has UID/);
      note(`R3 holder replaced: ${released.msg}`);
    });

    it('R0: at start, releases a stale lock owned by this pod name with another UID', whileGcPaused, async () => {
      const ns = await namespace('lh-r0');
      const previous = await createPod(ns.name, 'op-0', node);
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: previous.metadata?.uid as string });
      const { h, latency } = await paused!(async () => {
        await deletePod(ns.name, 'op-0', 0);
        const current = await createPod(ns.name, 'op-0', node);
        const t0 = performance.now();
        const started = await hook(ns, current);
        await started.releaser.ready;
        await waitFor('stale lock released by the hook', () => configMapGone(ns.name, 'op-lock'));
        return { h: started, latency: performance.now() - t0 };
      });
      assert.equal(hookReleased(h, 'R0').length, 1, 'the hook deleted the stale lock itself, by R0');
      note(`R0 stale own name: hook start -> lock gone ${latency.toFixed(0)} ms (garbage collector paused: the hook deleted it)`);
    });
  });

  describe('Leases owned by a pod (leader-for-life), freed like the ConfigMap lock', () => {
    // With the garbage collector paused, a Lease that goes was deleted by the
    // hook (docs/design.md#leases-owned-by-a-pod).
    const paused = pauseGarbageCollector();
    const whileGcPaused = { skip: paused ? false : 'needs the local cluster, whose garbage collector the test can pause' };
    const hookReleased = (h: HookUnderTest, rule: string, name: string) =>
      logsWith(h.logs, (l) => l.rule === rule && l.lock === `Lease/${name}` && /^released lock/.test(l.msg));

    it('R1: deletes the own owned Lease on SIGTERM while the pod is being deleted, once, by the ownerReference rule', async () => {
      const ns = await namespace('lh-r1-olease');
      const pod = await createPod(ns.name, 'op-0', node);
      // holderIdentity is the pod name too: the ownerReference rule alone releases it
      await createOwnedLease(ns.name, 'op-elect', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod);
      await h.releaser.ready;
      await deletePod(ns.name, 'op-0', 30);
      const result = await h.releaser.onTerminate();
      assert.equal(result.decision.release, true, JSON.stringify(result.decision));
      assert.deepEqual(result.released, ['Lease/op-elect']);
      assert.deepEqual(result.failed, []);
      // the pod object still exists (Terminating on a node no kubelet serves): the garbage collector deletes nothing
      assert.equal(await leaseGone(ns.name, 'op-elect'), true);
      const ev = await waitFor('LeaderLockReleased event', async () =>
        (await events(ns.name, 'LeaderLockReleased')).find((e) => e.involvedObject.name === 'op-0'),
      );
      assert.match(ev.message ?? '', /Lease\/op-elect/);
      assert.ok(logsWith(h.logs, (l) => /SIGTERM: released Lease\/op-elect/.test(l.msg)).length === 1, 'one log line for the release');
    });

    it('R2: deletes the Lease of a holder Failed with every container terminated', async () => {
      const ns = await namespace('lh-r2-olease');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'h-evicted', node);
      await setPodStatus(ns.name, 'h-evicted', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      await createOwnedLease(ns.name, 'h-elect', { name: 'h-evicted', uid: holder.metadata?.uid as string });
      const h = await hook(ns, standby);
      await h.releaser.ready;
      await setPodStatus(ns.name, 'h-evicted', 'Failed', 'Evicted');
      // the holder still exists, so the garbage collector does not delete the Lease: only the hook could
      await waitFor('Lease released by the hook', () => leaseGone(ns.name, 'h-elect'));
      assert.equal(hookReleased(h, 'R2', 'h-elect').length, 1);
      const released = await waitFor('LeaderLockReleased Events on the holder and on the releasing pod', async () => {
        const all = await events(ns.name, 'LeaderLockReleased');
        return all.length >= 2 ? all : undefined;
      });
      assert.ok(released.some((e) => e.involvedObject.name === 'h-evicted' && /Lease h-elect/.test(e.message ?? '')));
    });

    it('R3: deletes the Lease of a holder that no longer exists', whileGcPaused, async () => {
      const ns = await namespace('lh-r3-olease');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'h-gone', node);
      await createOwnedLease(ns.name, 'h-elect', { name: 'h-gone', uid: holder.metadata?.uid as string });
      const h = await hook(ns, standby);
      await h.releaser.ready;
      await paused!(async () => {
        await deletePod(ns.name, 'h-gone', 0);
        await waitFor('Lease released by the hook', () => leaseGone(ns.name, 'h-elect'));
      });
      assert.equal(hookReleased(h, 'R3', 'h-elect').length, 1, 'the hook deleted the Lease itself');
    });

    it('R0: at start, deletes a Lease owned by this pod name with another UID', whileGcPaused, async () => {
      const ns = await namespace('lh-r0-olease');
      const previous = await createPod(ns.name, 'op-0', node);
      await createOwnedLease(ns.name, 'op-elect', { name: 'op-0', uid: previous.metadata?.uid as string });
      const h = await paused!(async () => {
        await deletePod(ns.name, 'op-0', 0);
        const current = await createPod(ns.name, 'op-0', node);
        const started = await hook(ns, current);
        await started.releaser.ready;
        await waitFor('stale Lease released by the hook', () => leaseGone(ns.name, 'op-elect'));
        return started;
      });
      assert.equal(hookReleased(h, 'R0', 'op-elect').length, 1, 'the hook deleted the stale Lease itself, by R0');
    });

    it('never deletes a Lease of a running holder, nor one with two ownerReferences or a non-Pod owner (those are held by identity: R2 gives them the leaderless record)', async () => {
      const ns = await namespace('lh-no-olease');
      const standby = await createPod(ns.name, 'op-standby', node);
      const running = await createPod(ns.name, 'h-running', node);
      await setPodStatus(ns.name, 'h-running', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      const holder = await createPod(ns.name, 'h-evicted', node);
      await setPodStatus(ns.name, 'h-evicted', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      const evicted = { name: 'h-evicted', uid: holder.metadata?.uid as string };
      const runningLease = await createOwnedLease(ns.name, 'r-elect', { name: 'h-running', uid: running.metadata?.uid as string });
      const kept = [runningLease];
      // not a lock, so held by identity: R2 for such Leases writes the leaderless record, never a delete
      const byIdentity = [
        await createOwnedLease(ns.name, 'two-owners', evicted, [
          { apiVersion: 'v1', kind: 'Pod', ...evicted },
          { apiVersion: 'v1', kind: 'Pod', name: 'op-standby', uid: standby.metadata?.uid as string },
        ]),
        // owned by an object that exists (else the garbage collector would delete it), and is no Pod
        await createOwnedLease(ns.name, 'not-a-pod', evicted, [
          { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', name: 'r-elect', uid: runningLease.metadata?.uid as string },
        ]),
      ];
      // the control: a lock of the same holder, which must go
      await createOwnedLease(ns.name, 'h-elect', evicted);
      const h = await hook(ns, standby);
      await h.releaser.ready;
      await waitFor(
        'the running holder read live and its Lease kept',
        async () => logsWith(h.logs, (l) => l.lock === 'Lease/r-elect' && l.holder === 'h-running' && /lock kept$/.test(l.msg))[0],
      );
      await setPodStatus(ns.name, 'h-evicted', 'Failed', 'Evicted');
      await waitFor('the control Lease released by the hook', () => leaseGone(ns.name, 'h-elect'));
      const kube = await admin();
      for (const lease of kept) {
        const name = lease.metadata?.name as string;
        assert.equal((await kube.getLease(ns.name, name)).metadata?.resourceVersion, lease.metadata?.resourceVersion, `${name} untouched`);
      }
      for (const lease of byIdentity) {
        const name = lease.metadata?.name as string;
        const after = await waitFor(`${name} given the leaderless record`, async () => {
          const l = await kube.getLease(ns.name, name);
          return l.spec?.holderIdentity ? undefined : l;
        });
        assert.equal(after.metadata?.uid, lease.metadata?.uid, `${name} not deleted`);
        assert.equal(after.spec?.leaseDurationSeconds, 1);
      }
      assert.deepEqual(
        logsWith(h.logs, (l) => /^released lock/.test(l.msg))
          .map((l) => `${l.rule} ${l.lock}`)
          .sort(),
        ['R2 Lease/h-elect', 'R2 Lease/not-a-pod', 'R2 Lease/two-owners'],
      );
    });
  });

  describe('the waiting side', () => {
    it('a standby reports a crash-looping holder once, a healthy one never; a pod holding its own lock does not', async () => {
      const ns = await namespace('lh-wait');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'op-leader', node);
      await setPodStatus(ns.name, 'op-leader', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'running' });
      await createLock(ns.name, 'op-lock', { name: 'op-leader', uid: holder.metadata?.uid as string });
      const other = await createPod(ns.name, 'other-leader', node, { labels: { app: 'another-operator' } });
      await createLock(ns.name, 'other-lock', { name: 'other-leader', uid: other.metadata?.uid as string });
      const h = await hook(ns, standby, { waitReportIntervalSeconds: 1 });
      const leaderHook = await hook(ns, holder, { waitReportIntervalSeconds: 1 });
      await Promise.all([h.releaser.ready, leaderHook.releaser.ready]);
      const line = await waitFor(
        'the standby logs the healthy holder',
        async () => logsWith(h.logs, (l) => l.holder === 'op-leader' && l.holderState === 'running' && /Running and Ready: waiting$/.test(l.msg))[0],
        10_000,
      );
      assert.equal(typeof line.waitedSeconds, 'number');
      // three more report intervals: a healthy Running leader is no reason for an Event
      await sleep(3_000);
      assert.deepEqual(await events(ns.name, 'LeaderLockHeld'), [], 'no Event while the holder is Running and Ready');
      await setPodStatus(ns.name, 'op-leader', 'Running', undefined, { setup: 'terminated', leaderhook: 'running', manager: 'waiting' });
      const looping = await waitFor(
        'crash-loop reported',
        async () => (await events(ns.name, 'LeaderLockHeld')).find((e) => e.involvedObject.name === 'op-standby' && /crash-looping/.test(e.message ?? '')),
        10_000,
      );
      assert.equal(looping.type, 'Warning');
      assert.match(looping.message ?? '', /op-leader/);
      assert.match(looping.message ?? '', /delete that pod/);
      await sleep(3_000);
      const held = await events(ns.name, 'LeaderLockHeld');
      assert.equal(held.length, 1, `one Event for the state change, not one per interval: ${held.map((e) => e.message).join(' | ')}`);
      assert.equal(await configMapGone(ns.name, 'op-lock'), false, 'a crash-looping holder keeps its lock');
      assert.deepEqual(
        held.filter((e) => e.involvedObject.name === 'op-leader'),
        [],
        'the leader, holding its own lock, reports no wait',
      );
      assert.deepEqual(
        held.filter((e) => /other-lock/.test(e.message ?? '')),
        [],
        'a lock of another workload is not reported as waited for',
      );
    });
  });

  describe('permissions', () => {
    it('reports missing permissions at start and keeps running with what it has', async () => {
      const ns = await namespace('lh-perm', [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      ]);
      const pod = await createPod(ns.name, 'op-0', node);
      await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
      const h = await hook(ns, pod);
      await h.releaser.ready;
      const warn = logsWith(h.logs, (l) => /^missing permissions/.test(l.msg))[0];
      assert.ok(warn, 'missing permissions logged');
      for (const m of ['configmaps delete', 'leases get', 'leases update', 'leases delete', 'pods watch', 'events create']) {
        assert.ok((warn.missing as string[]).includes(m), `reports ${m}`);
      }
      await deletePod(ns.name, 'op-0', 30);
      const result = await h.releaser.onTerminate();
      assert.equal(result.decision.release, true);
      assert.equal(result.released.length, 0);
      assert.match(result.failed.join('\n'), /ConfigMap\/op-lock: .*403/);
      assert.equal(await configMapGone(ns.name, 'op-lock'), false);
    });
  });

  describe('missing permissions are visible', () => {
    it('a Warning Event on the hook pod names what is missing and what it disables', async () => {
      const ns = await namespace('lh-perm-event', [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'update', 'delete'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'watch'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      ]);
      const pod = await createPod(ns.name, 'op-0', node);
      const h = await hook(ns, pod);
      await h.releaser.ready;
      const warning = await waitFor('ReleaseHookPermissionsMissing Event', async () =>
        (await events(ns.name, 'ReleaseHookPermissionsMissing')).find((e) => e.involvedObject.name === 'op-0'),
      );
      assert.equal(warning.type, 'Warning');
      assert.match(warning.message ?? '', /configmaps delete/);
      assert.match(warning.message ?? '', /ConfigMap locks cannot be released/);
      assert.doesNotMatch(warning.message ?? '', /leases/, 'only what is missing');
    });
  });

  describe('R2 driven by the real kubelet', () => {
    it('releases the lock of a pod the kubelet fails for activeDeadlineSeconds', async (t) => {
      const kube = await admin();
      const realNode = process.env.NODE_NAME ?? 'leaderhook-node';
      const ready = await kube
        .request<{ status?: { conditions?: { type: string; status: string }[] } }>({ method: 'GET', path: `/api/v1/nodes/${realNode}` })
        .then((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        .catch(() => false);
      if (!ready) {
        t.skip(`node ${realNode} is not Ready`);
        return;
      }
      const ns = await namespace('lh-r2-kubelet');
      const standby = await createPod(ns.name, 'op-standby', node);
      const holder = await createPod(ns.name, 'h-deadline', realNode, {
        spec: {
          activeDeadlineSeconds: 4,
          terminationGracePeriodSeconds: 2,
          initContainers: [],
          containers: [{ name: 'manager', image: pauseImage, imagePullPolicy: 'Never' }],
        },
      });
      await createLock(ns.name, 'op-lock', { name: 'h-deadline', uid: holder.metadata?.uid as string });
      const h = await hook(ns, standby);
      await h.releaser.ready;
      await waitFor('holder running', async () => (await kube.getPod(ns.name, 'h-deadline')).status?.phase === 'Running', 60_000, 250);
      await waitFor('lock released after the deadline', () => configMapGone(ns.name, 'op-lock'), 90_000, 100);
      const failed = await kube.getPod(ns.name, 'h-deadline');
      assert.equal(failed.status?.phase, 'Failed');
      assert.equal(failed.status?.reason, 'DeadlineExceeded');
      const line = logsWith(h.logs, (l) => l.rule === 'R2' && /^released lock op-lock/.test(l.msg))[0];
      assert.ok(line, 'released by R2');
      const finished = failed.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
      const releasedAt = new Date(line.time as number);
      note(
        `R2 real kubelet (DeadlineExceeded): container finished ${finished}, lock released ${releasedAt.toISOString()} (${((releasedAt.getTime() - Date.parse(finished as string)) / 1000).toFixed(1)} s later; finishedAt has 1 s resolution)`,
      );
    });
  });
});
