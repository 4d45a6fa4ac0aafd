/**
 * R1 on its own: the SIGTERM path with its candidates handed in and a client
 * stub, no watch and no server. What the watches would have found is the
 * test's input.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { KubeClient } from '../../../src/kube/client.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import type { ConfigMap, Lease, Pod } from '../../../src/kube/types.ts';
import type { HookContext } from '../../../src/releaser/context.ts';
import { eventRecorder } from '../../../src/releaser/events.ts';
import { noMetrics } from '../../../src/releaser/metrics.ts';
import { type OwnCandidates, Terminator } from '../../../src/releaser/terminate.ts';
import { KnownPermissions } from '../../../src/releaser/permissions.ts';

const uid = 'uid-self';
const now = Date.parse('2026-01-01T00:00:00Z');
const pod = (deletionInSeconds?: number): Pod => ({
  metadata: {
    name: 'op-0',
    namespace: 'ns',
    uid,
    ...(deletionInSeconds === undefined ? {} : { deletionTimestamp: new Date(now + deletionInSeconds * 1000).toISOString() }),
  },
  spec: { containers: [{ name: 'manager' }] },
});
const lock: ConfigMap = {
  metadata: { name: 'op-lock', namespace: 'ns', uid: 'cm-1', resourceVersion: '7', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid }] },
};
const lease: Lease = { metadata: { name: 'op-lease', namespace: 'ns', resourceVersion: '3' }, spec: { holderIdentity: 'op-0_abc', leaseDurationSeconds: 15 } };

/** A client that answers only what R1 asks, and records each call. */
/** Methods a test answers its own way; they record their calls in `calls` themselves. */
type Overrides = (calls: string[]) => Record<string, unknown>;

function stubClient(ownPod: Pod, otherPods: Pod[], overrides: Overrides) {
  const calls: string[] = [];
  const client = {
    stats: { bytesReceived: 0 },
    getPod: async (_ns: string, name: string) => {
      calls.push(`getPod ${name}`);
      return ownPod;
    },
    listPods: async () => {
      calls.push('listPods');
      return { items: [ownPod, ...otherPods] };
    },
    deleteConfigMap: async (_ns: string, name: string, pre: unknown) => {
      calls.push(`deleteConfigMap ${name} ${JSON.stringify(pre)}`);
    },
    deleteLease: async (_ns: string, name: string, pre: unknown) => {
      calls.push(`deleteLease ${name} ${JSON.stringify(pre)}`);
    },
    updateLease: async (_ns: string, l: Lease) => {
      calls.push(`updateLease ${l.metadata?.name} holder=${JSON.stringify(l.spec?.holderIdentity)}`);
      return l;
    },
    createEvent: async (_ns: string, e: { reason?: string }) => {
      calls.push(`createEvent ${e.reason}`);
      return e;
    },
    ...overrides(calls),
  };
  const unexpected = (method: string) => () => {
    throw new KubeApiError({ method, path: '(stub)', status: 0, reason: 'Unexpected', detail: `${method} was not expected` });
  };
  const full = new Proxy(client, {
    get: (target, key: string) => (key in target ? target[key as keyof typeof target] : unexpected(key)),
  }) as unknown as KubeClient;
  return { client: full, calls };
}

function run(
  ownPod: Pod,
  candidates: OwnCandidates,
  {
    observe = false,
    otherPods = [],
    overrides = () => ({}),
    perms,
  }: { observe?: boolean; otherPods?: Pod[]; overrides?: Overrides; perms?: KnownPermissions } = {},
) {
  const { client, calls } = stubClient(ownPod, otherPods, overrides);
  let stopped = 0;
  const ctx: HookContext = {
    client,
    ns: 'ns',
    podName: 'op-0',
    podUid: uid,
    self: { name: 'op-0', namespace: 'ns', uid },
    log: pino({ level: 'silent' }),
    clock: { now: () => now },
    metrics: noMetrics,
    signal: new AbortController().signal,
    perms: perms ?? new KnownPermissions(),
  };
  const terminator = new Terminator(
    ctx,
    { client, events: eventRecorder(ctx), candidates },
    {
      marginSeconds: 2,
      releaseTimeoutMs: 1500,
      observe,
      stopBackground: () => stopped++,
    },
  );
  return { onTerminate: () => terminator.onTerminate(), calls, stopped: () => stopped };
}

const given = (locks: ConfigMap[], leases: Lease[], owned: Lease[] = []): OwnCandidates => ({
  locks: async () => locks,
  leases: async () => [...leases, ...owned],
});
/** A leader-for-life Lease owned by this pod (docs/design.md#leases-owned-by-a-pod). */
const ownedLease: Lease = {
  metadata: {
    name: 'op-elect',
    namespace: 'ns',
    uid: 'lease-1',
    resourceVersion: '5',
    ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid }],
  },
  spec: { holderIdentity: 'op-0' },
};

describe('terminator (R1 without watches)', () => {
  it('releases the candidates it is given: the lock with its preconditions, the Lease with a leaderless record', async () => {
    const r = run(pod(30), given([lock], [lease]));
    const result = await r.onTerminate();
    assert.equal(r.stopped(), 1, 'the background work is stopped first');
    assert.deepEqual(result.released.sort(), ['ConfigMap/op-lock', 'Lease/op-lease']);
    assert.deepEqual(r.calls.filter((c) => !c.startsWith('createEvent')).sort(), [
      'deleteConfigMap op-lock {"uid":"cm-1","resourceVersion":"7"}',
      'getPod op-0',
      'listPods',
      'updateLease op-lease holder=""',
    ]);
    assert.equal(r.calls.filter((c) => c === 'createEvent LeaderLockReleased').length, 2, 'one Event per lock');
  });

  it('releases nothing, and asks nothing more, when the own pod is not being deleted', async () => {
    const r = run(pod(), given([lock], [lease]));
    const result = await r.onTerminate();
    assert.equal(!result.decision.release && result.decision.refusal, 'notBeingDeleted');
    assert.deepEqual(r.calls, ['getPod op-0']);
  });

  it('in observe mode names what it would release and changes nothing', async () => {
    const r = run(pod(30), given([lock], []), { observe: true });
    const result = await r.onTerminate();
    assert.deepEqual(result.observed, ['ConfigMap/op-lock']);
    assert.deepEqual(result.released, []);
    assert.deepEqual(r.calls, ['getPod op-0', 'createEvent LeaderLockWouldRelease']);
  });

  it("in the webhook's observe mode (the flag) changes nothing, though the pod's annotation turns observe off", async () => {
    const annotated = pod(30);
    annotated.metadata = { ...annotated.metadata, annotations: { 'leaderhook.io/observe': 'false' } };
    const r = run(annotated, given([lock], [lease]), { observe: true });
    const result = await r.onTerminate();
    assert.deepEqual(result.observed.sort(), ['ConfigMap/op-lock', 'Lease/op-lease']);
    assert.deepEqual(result.released, []);
    assert.ok(!r.calls.some((c) => c.startsWith('deleteConfigMap') || c.startsWith('updateLease')), r.calls.join('\n'));
  });

  it('without the flag, the pod annotation turns observe mode on', async () => {
    const annotated = pod(30);
    annotated.metadata = { ...annotated.metadata, annotations: { 'leaderhook.io/observe': 'yes' } };
    const r = run(annotated, given([lock], []));
    const result = await r.onTerminate();
    assert.deepEqual(result.observed, ['ConfigMap/op-lock']);
    assert.deepEqual(result.released, []);
  });

  it('reports a candidate lookup that failed, and still releases the rest', async () => {
    const r = run(pod(30), {
      locks: async () => {
        throw new Error('listing ConfigMaps: 503');
      },
      leases: async () => [lease],
    });
    const result = await r.onTerminate();
    assert.deepEqual(result.released, ['Lease/op-lease']);
    assert.deepEqual(result.failed, ['finding own ConfigMap locks: listing ConfigMaps: 503']);
  });

  it('deletes a Lease owned by this pod with preconditions of what was read, and writes no leaderless record over it', async () => {
    const r = run(pod(30), given([], [], [ownedLease]));
    const result = await r.onTerminate();
    assert.deepEqual(result.released, ['Lease/op-elect']);
    assert.deepEqual(
      r.calls.filter((c) => !c.startsWith('createEvent')),
      ['getPod op-0', 'deleteLease op-elect {"uid":"lease-1","resourceVersion":"5"}'],
    );
    assert.equal(r.calls.filter((c) => c === 'createEvent LeaderLockReleased').length, 1);
  });

  it('deletes an owned Lease even when the pod hostname is not its name: the UID, not an identity, tells it apart', async () => {
    const own = pod(30);
    own.spec = { ...own.spec, containers: own.spec?.containers ?? [], hostNetwork: true };
    const r = run(own, given([], [], [ownedLease]));
    assert.deepEqual((await r.onTerminate()).released, ['Lease/op-elect']);
  });

  it('releases no owned Lease when the pod is not being deleted (a crash-restart)', async () => {
    const r = run(pod(), given([], [], [ownedLease]));
    const result = await r.onTerminate();
    assert.equal(!result.decision.release && result.decision.refusal, 'notBeingDeleted');
    assert.deepEqual(r.calls, ['getPod op-0']);
  });

  it('in observe mode names the owned Lease and deletes nothing', async () => {
    const r = run(pod(30), given([], [], [ownedLease]), { observe: true });
    const result = await r.onTerminate();
    assert.deepEqual(result.observed, ['Lease/op-elect']);
    assert.ok(!r.calls.some((c) => c.startsWith('deleteLease')), r.calls.join('\n'));
  });

  describe('a Lease held by identity (docs/design.md#leases-held-by-identity)', () => {
    const withHostname = (hostname: string): Pod => {
      const p = pod(30);
      return { ...p, spec: { ...p.spec, containers: p.spec?.containers ?? [], hostname } };
    };
    const replica = (name: string, hostname?: string): Pod => ({
      metadata: { name, namespace: 'ns', uid: `uid-${name}` },
      spec: { containers: [{ name: 'manager' }], ...(hostname ? { hostname } : {}) },
      status: { phase: 'Running' },
    });
    const held = (holderIdentity: string): Lease => ({ ...lease, spec: { ...lease.spec, holderIdentity } });

    it('releases one held as its spec.hostname when no other pod can carry it', async () => {
      const r = run(withHostname('operator'), given([], [held('operator_abc')]), { otherPods: [replica('op-1')] });
      const result = await r.onTerminate();
      assert.deepEqual(result.released, ['Lease/op-lease']);
      assert.deepEqual(result.kept, []);
    });

    it('keeps it, writing nothing, when a replica shares the spec.hostname', async () => {
      const r = run(withHostname('operator'), given([], [held('operator_abc')]), { otherPods: [replica('op-1', 'operator')] });
      const result = await r.onTerminate();
      assert.deepEqual(result.released, []);
      assert.equal(result.kept.length, 1);
      assert.match(result.kept[0] ?? '', /^Lease\/op-lease: .*op-1/);
      assert.ok(!r.calls.some((c) => c.startsWith('updateLease') || c.startsWith('createEvent')), r.calls.join('\n'));
    });

    it('keeps it when the hook may not list pods: nothing proves the name unique', async () => {
      const perms = new KnownPermissions(new Map([['pods/list', false]]));
      const r = run(pod(30), given([], [lease]), { perms });
      const result = await r.onTerminate();
      assert.deepEqual(result.released, []);
      assert.match(result.kept[0] ?? '', /may not list pods/);
      assert.ok(!r.calls.includes('listPods') && !r.calls.some((c) => c.startsWith('updateLease')), r.calls.join('\n'));
    });

    it('after a conflict, writes the version read again only if a new pod list still proves it its own', async () => {
      let lists = 0;
      const r = run(withHostname('operator'), given([], [held('operator_abc')]), {
        overrides: (calls) => ({
          // a replica sharing the hostname appears between the first list and the second
          listPods: async () => {
            calls.push('listPods');
            lists++;
            return { items: lists === 1 ? [withHostname('operator')] : [withHostname('operator'), replica('op-1', 'operator')] };
          },
          updateLease: async (_ns: string, l: Lease) => {
            calls.push(`updateLease ${l.metadata?.resourceVersion}`);
            throw new KubeApiError({ method: 'PUT', path: '(stub)', status: 409, reason: 'Conflict', detail: 'the object has been modified' });
          },
          getLease: async () => {
            calls.push('getLease');
            return { ...held('operator_abc'), metadata: { ...lease.metadata, resourceVersion: '4' } };
          },
        }),
      });
      const result = await r.onTerminate();
      assert.deepEqual(result.released, []);
      assert.deepEqual(result.moved, ['Lease/op-lease']);
      assert.deepEqual(
        r.calls.filter((c) => !c.startsWith('createEvent')),
        ['getPod op-0', 'listPods', 'updateLease 3', 'getLease', 'listPods'],
      );
    });
  });
});
