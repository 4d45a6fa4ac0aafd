/**
 * The hook's lock store without HTTP: the lock cache sorts candidates to its
 * handlers, the own locks and the foreign locks act on them through their
 * narrow clients, faked here in memory, and wait reports read the foreign
 * locks through their read-only view.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMap, OwnerReference, Pod } from '../../../src/kube/types.ts';
import type { ForeignLockClient, HookContext, OwnLockClient } from '../../../src/releaser/context.ts';
import type { EventRecorder } from '../../../src/releaser/events.ts';
import { ForeignLocks } from '../../../src/releaser/foreign-locks.ts';
import { LockCache } from '../../../src/releaser/lock-cache.ts';
import { OwnLocks } from '../../../src/releaser/own-locks.ts';
import { memoryObjects, notFound, testContext } from './memory-objects.ts';

const self: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-self' };
const other: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-1', uid: 'uid-other' };
const configMap = (name: string, owner: OwnerReference, resourceVersion = '1', data?: Record<string, string>): ConfigMap => ({
  metadata: { name, namespace: 'ns', uid: `cm-${name}`, resourceVersion, ownerReferences: [owner] },
  ...(data ? { data } : {}),
});
const runningPod = (owner: OwnerReference): Pod => ({
  metadata: { name: owner.name, namespace: 'ns', uid: owner.uid },
  spec: { nodeName: 'node-a', containers: [{ name: 'manager' }] },
  status: { phase: 'Running' },
});

/** The API as the lock store sees it: ConfigMaps and pods by name, in memory, and every call in order. */
function memoryApi() {
  const configMaps = new Map<string, ConfigMap>();
  const pods = new Map<string, Pod>([[self.name, runningPod(self)]]);
  const calls: string[] = [];
  const cms = memoryObjects('ConfigMap', 'configmaps', configMaps, calls);
  const client: ForeignLockClient & OwnLockClient = {
    getConfigMap: cms.get,
    getPod: memoryObjects('Pod', 'pods', pods, calls).get,
    deleteConfigMap: cms.delete,
    async listConfigMapsMetadata() {
      calls.push('listConfigMapsMetadata');
      return { items: [...configMaps.values()] };
    },
    async listLeases() {
      calls.push('listLeases');
      return { items: [] };
    },
    getLease: async (_ns, name) => Promise.reject(notFound(`leases/${name}`)),
    deleteLease: async (_ns, name) => Promise.reject(notFound(`leases/${name}`)),
  };
  return { configMaps, pods, calls, client };
}

const context = () => testContext(self);

function recordedEvents() {
  const reasons: string[] = [];
  const events: EventRecorder = {
    emit: async (_target, reason) => void reasons.push(reason),
    emitOnBoth: async (_holder, reason) => void reasons.push(reason),
  };
  return { events, reasons };
}

/** The store as runReleaser wires it; the cache's watch is never started: the test puts what it would deliver. */
function store(api: ReturnType<typeof memoryApi>) {
  const ctx = context();
  // the cache reaches the API only through its watch, which no test here starts
  const cache = new LockCache({ ...ctx, client: undefined as unknown as HookContext['client'] }, undefined);
  const own = new OwnLocks(ctx, {
    client: api.client,
    cache,
    leases: { current: () => [], ownsOne: () => false, names: () => [] },
    releaseTimeoutMs: 1000,
  });
  const { events, reasons } = recordedEvents();
  const foreign = new ForeignLocks(ctx, {
    client: api.client,
    events,
    cache,
    watchPod: () => assert.fail('the hook may not watch pods'),
    observe: false,
  });
  return { cache, own, foreign, reasons };
}

async function settle(done: () => boolean): Promise<void> {
  for (let turn = 0; !done() && turn < 200; turn++) await new Promise(setImmediate);
  assert.ok(done(), 'settled');
}

describe('the lock store', () => {
  it("indexes the candidates by their owner's UID and hands each to the own or the foreign locks", async () => {
    const api = memoryApi();
    const mine = configMap('op-lock', self);
    const theirs = configMap('their-lock', other);
    api.configMaps.set('op-lock', mine).set('their-lock', theirs);
    api.pods.set(other.name, runningPod(other));
    const { cache, own, foreign } = store(api);
    cache.put(mine);
    cache.put(theirs);
    assert.deepEqual(cache.ownedBy(self.uid), ['op-lock']);
    assert.deepEqual(cache.ownedBy(other.uid), ['their-lock']);
    assert.deepEqual(own.known.locks, ['op-lock']);
    assert.deepEqual(
      foreign.tracked().map((t) => t.name),
      ['their-lock'],
    );
    const [tracked] = foreign.tracked();
    await settle(() => tracked?.decision !== undefined);
    assert.deepEqual(tracked?.decision, { release: false, state: 'running', message: 'holder pod op-1 is Running on node node-a' });
    assert.equal(tracked?.isLock, true);
    foreign.stop();
  });

  it('forgets a candidate on its way out, in both handlers', () => {
    const api = memoryApi();
    const { cache, own, foreign } = store(api);
    cache.put(configMap('op-lock', self));
    cache.put(configMap('their-lock', other));
    for (const name of ['op-lock', 'their-lock']) {
      const leaving = configMap(name, name === 'op-lock' ? self : other, '2');
      leaving.metadata = { ...leaving.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' };
      cache.put(leaving);
    }
    assert.deepEqual(own.known.locks, []);
    assert.deepEqual(foreign.tracked(), []);
    assert.deepEqual(cache.ownedBy(self.uid), []);
    foreign.stop();
  });

  it('releases the lock of a holder that is gone (R3), with the preconditions of the version read', async () => {
    const api = memoryApi();
    const theirs = configMap('their-lock', other, '7');
    api.configMaps.set('their-lock', theirs);
    const { cache, foreign, reasons } = store(api);
    cache.put(theirs);
    await settle(() => reasons.includes('LeaderLockReleased'));
    assert.deepEqual(api.calls, [
      'getConfigMap their-lock',
      'getPod op-1',
      'getPod op-0',
      'deleteConfigMap their-lock {"uid":"cm-their-lock","resourceVersion":"7"}',
    ]);
    assert.deepEqual(foreign.tracked(), [], 'a released lock is tracked no more');
  });

  it('hands a lock that changed hands to the own locks, through the cache, when the live read finds it is ours now', async () => {
    const api = memoryApi();
    api.configMaps.set('op-lock', configMap('op-lock', self, '8'));
    const { cache, own, foreign } = store(api);
    // the watch still shows the previous holder
    cache.put(configMap('op-lock', other, '7'));
    await settle(() => own.holdsLock);
    assert.deepEqual(foreign.tracked(), []);
    assert.deepEqual(cache.ownedBy(self.uid), ['op-lock']);
    assert.ok(!api.calls.some((c) => c.startsWith('deleteConfigMap')), api.calls.join('\n'));
  });

  it('keeps a ConfigMap with data out of the locks: never released, never reported', async () => {
    const api = memoryApi();
    api.configMaps.set('their-config', configMap('their-config', other, '3', { key: 'value' }));
    const { cache, foreign } = store(api);
    cache.put(configMap('their-config', other, '3'));
    await settle(() => api.calls.includes('getConfigMap their-config'));
    await new Promise(setImmediate);
    const [tracked] = foreign.tracked();
    assert.equal(tracked?.isLock, false);
    assert.equal(tracked?.decision, undefined);
    assert.deepEqual(api.calls, ['getConfigMap their-config']);
    foreign.stop();
  });
});

describe('the own locks at SIGTERM', () => {
  it('are the versions read ahead of SIGTERM, with no request, while the cache is live', async () => {
    const api = memoryApi();
    const mine = configMap('op-lock', self, '4');
    api.configMaps.set('op-lock', mine);
    const ctx = context();
    const handlers: { upsert(cm: ConfigMap, owner: OwnerReference): void }[] = [];
    const cache = { subscribe: (h: (typeof handlers)[number]) => void handlers.push(h), lockName: undefined, locksLive: true };
    const own = new OwnLocks(ctx, {
      client: api.client,
      cache,
      leases: { current: () => [], ownsOne: () => false, names: () => [] },
      releaseTimeoutMs: 1000,
    });
    for (const h of handlers) h.upsert(mine, self);
    await settle(() => api.calls.length === 1);
    await new Promise(setImmediate);
    api.calls.length = 0;
    assert.deepEqual(await own.locks(new AbortController().signal), [mine]);
    assert.deepEqual(await own.leases(new AbortController().signal), []);
    assert.deepEqual(api.calls, []);
  });

  it('are looked up by the pinned name while the cache is not live', async () => {
    const api = memoryApi();
    const mine = configMap('op-lock', self, '4');
    api.configMaps.set('op-lock', mine);
    const cache = { subscribe: () => {}, lockName: 'op-lock', locksLive: false };
    const own = new OwnLocks(context(), {
      client: api.client,
      cache,
      leases: { current: () => undefined, ownsOne: () => false, names: () => [] },
      releaseTimeoutMs: 1000,
    });
    assert.deepEqual(await own.locks(new AbortController().signal), [mine]);
    assert.deepEqual(await own.leases(new AbortController().signal), []);
    assert.deepEqual(api.calls, ['getConfigMap op-lock', 'listLeases']);
  });
});
