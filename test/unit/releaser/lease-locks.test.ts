/**
 * Leases owned by a pod (docs/design.md#leases-owned-by-a-pod) without HTTP:
 * the Lease watch's store hands them to the foreign locks, which apply R0,
 * R2 and R3 as to a ConfigMap lock, through a narrow client faked in memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease, OwnerReference, Pod } from '../../../src/kube/types.ts';
import type { ForeignLockClient, HookContext } from '../../../src/releaser/context.ts';
import type { EventRecorder } from '../../../src/releaser/events.ts';
import { ForeignLocks } from '../../../src/releaser/foreign-locks.ts';
import { HeldLeases } from '../../../src/releaser/held-leases.ts';
import { leaseLocks } from '../../../src/releaser/lock-kinds.ts';
import { memoryObjects, notFound, testContext } from './memory-objects.ts';

const self: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-self' };
const other: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-1', uid: 'uid-other' };
const ownedLease = (name: string, owners: OwnerReference[], spec: Lease['spec'] = { holderIdentity: owners[0]?.name }): Lease => ({
  metadata: { name, namespace: 'ns', uid: `lease-${name}`, resourceVersion: '7', ownerReferences: owners },
  spec,
});
const pod = (owner: OwnerReference, status: Pod['status']): Pod => ({
  metadata: { name: owner.name, namespace: 'ns', uid: owner.uid },
  spec: { nodeName: 'node-a', containers: [{ name: 'manager' }] },
  status,
});
const terminated = { name: 'manager', image: 'op', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0 } } };

/** Leases and pods in memory; every call in order; every Event with its message. */
function setup() {
  const leases = new Map<string, Lease>();
  const pods = new Map<string, Pod>([[self.name, pod(self, { phase: 'Running' })]]);
  const calls: string[] = [];
  const events: string[] = [];
  const memoryLeases = memoryObjects('Lease', 'leases', leases, calls);
  const client: ForeignLockClient = {
    getConfigMap: async (_ns, name) => Promise.reject(notFound(`configmaps/${name}`)),
    deleteConfigMap: async () => assert.fail('no ConfigMap here'),
    getLease: memoryLeases.get,
    deleteLease: memoryLeases.delete,
    getPod: memoryObjects('Pod', 'pods', pods, calls).get,
  };
  const ctx = testContext(self);

  const recorder: EventRecorder = {
    emit: async (_target, reason, _type, message) => void events.push(`${reason}: ${message}`),
    emitOnBoth: async (_holder, reason, message) => void events.push(`${reason}: ${message}`),
  };
  // the Lease watch is never started: the test puts what it would deliver into its store
  const held = new HeldLeases({ ...ctx, client: undefined as unknown as HookContext['client'] });
  const foreign = new ForeignLocks(ctx, {
    kind: leaseLocks,
    client,
    events: recorder,
    cache: held.locks,
    watchPod: () => assert.fail('the hook may not watch pods'),
    observe: false,
  });
  /** Puts the Leases as the watch would list them, and lets every evaluation run. */
  const list = async (...items: Lease[]) => {
    for (const l of items) leases.set(l.metadata?.name as string, l);
    held.locks.replace(items);
    for (let turn = 0; turn < 50; turn++) await new Promise(setImmediate);
  };
  return { leases, pods, calls, events, foreign, list };
}

describe('Leases owned by a pod, held by another pod (R0, R2, R3)', () => {
  it('R3: deletes the Lease of a holder that is gone, with the preconditions of the version read', async () => {
    const s = setup();
    await s.list(ownedLease('elect', [other]));
    assert.deepEqual(s.calls, ['getLease elect', 'getPod op-1', 'getPod op-0', 'deleteLease elect {"uid":"lease-elect","resourceVersion":"7"}']);
    assert.equal(s.events.length, 1);
    assert.match(s.events[0] ?? '', /^LeaderLockReleased: Released leader lock Lease elect \(R3: /);
    assert.deepEqual(s.foreign.tracked(), []);
  });

  it('R2: deletes the Lease of a holder that finished, every container terminated', async () => {
    const s = setup();
    s.pods.set(other.name, pod(other, { phase: 'Failed', containerStatuses: [terminated] }));
    await s.list(ownedLease('elect', [other]));
    assert.ok(s.calls.includes('deleteLease elect {"uid":"lease-elect","resourceVersion":"7"}'), s.calls.join('\n'));
    assert.match(s.events[0] ?? '', /\(R2: holder pod op-1 is Failed and every container is terminated\)/);
  });

  it('R0: deletes a Lease owned by an earlier pod of this name (another UID)', async () => {
    const s = setup();
    await s.list(ownedLease('elect', [{ ...self, uid: 'uid-earlier' }]));
    assert.ok(s.calls.includes('deleteLease elect {"uid":"lease-elect","resourceVersion":"7"}'), s.calls.join('\n'));
    assert.match(s.events[0] ?? '', /Released leader lock Lease elect \(R0: /);
  });

  it('keeps the Lease of a holder that runs, or crash-loops (a restarted operator keeps its lock)', async () => {
    for (const status of [
      { phase: 'Running' },
      { phase: 'Running', containerStatuses: [{ ...terminated, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } } }] },
    ]) {
      const s = setup();
      s.pods.set(other.name, pod(other, status));
      await s.list(ownedLease('elect', [other]));
      assert.deepEqual(s.calls, ['getLease elect', 'getPod op-1']);
      assert.equal(s.foreign.tracked()[0]?.decision?.release, false);
      s.foreign.stop();
    }
  });

  it("reads nothing when a running holder renews its Lease: the holder's watch, not the renewal, triggers the next evaluation", async () => {
    const s = setup();
    s.pods.set(other.name, pod(other, { phase: 'Running' }));
    await s.list(ownedLease('elect', [other]));
    const before = s.calls.length;
    const renewed = ownedLease('elect', [other]);
    renewed.metadata = { ...renewed.metadata, resourceVersion: '8' };
    s.leases.set('elect', renewed);
    s.foreign.upsert(renewed, other);
    for (let turn = 0; turn < 50; turn++) await new Promise(setImmediate);
    assert.equal(s.calls.length, before, s.calls.join('\n'));
    // the next evaluation reads the renewed version before anything else
    s.pods.delete(other.name);
    const [tracked] = s.foreign.tracked();
    assert.ok(tracked);
    await s.foreign.evaluate(tracked);
    assert.deepEqual(s.calls.slice(before), ['getLease elect', 'getPod op-1', 'getPod op-0', 'deleteLease elect {"uid":"lease-elect","resourceVersion":"8"}']);
  });

  it('keeps the Lease of a holder Failed with a container not reported terminated', async () => {
    const s = setup();
    s.pods.set(other.name, pod(other, { phase: 'Failed', containerStatuses: [{ ...terminated, state: { running: {} } }] }));
    await s.list(ownedLease('elect', [other]));
    assert.ok(!s.calls.some((c) => c.startsWith('deleteLease')), s.calls.join('\n'));
    s.foreign.stop();
  });

  it('never touches a Lease with two ownerReferences, a non-Pod owner, or spec.strategy', async () => {
    const s = setup();
    await s.list(
      ownedLease('two', [other, { ...other, name: 'op-2', uid: 'uid-2' }]),
      ownedLease('deployment', [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'op', uid: 'uid-d' }]),
      ownedLease('coordinated', [other], { holderIdentity: 'op-1', strategy: 'OldestEmulationVersion' }),
    );
    assert.deepEqual(s.calls, []);
    assert.deepEqual(s.foreign.tracked(), []);
  });

  it('never deletes a Lease whose live read shows spec.strategy, whatever the watch showed', async () => {
    const s = setup();
    // the watch delivered a version without strategy; the live read finds one
    s.leases.set('elect', ownedLease('elect', [other], { strategy: 'OldestEmulationVersion' }));
    s.foreign.upsert(ownedLease('elect', [other]), other);
    for (let turn = 0; turn < 50; turn++) await new Promise(setImmediate);
    assert.deepEqual(s.calls, ['getLease elect']);
    assert.equal(s.foreign.tracked()[0]?.isLock, false);
    s.foreign.stop();
  });

  it('leaves a Lease owned by this pod to R1', async () => {
    const s = setup();
    await s.list(ownedLease('elect', [self]));
    assert.deepEqual(s.calls, []);
    assert.deepEqual(s.foreign.tracked(), []);
  });
});
