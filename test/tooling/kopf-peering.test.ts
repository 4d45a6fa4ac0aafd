/**
 * kopf's peering read as a Lease held by its top-priority entry
 * (test/support/kopf-peering.ts), and the split-brain check over it: the
 * standby's heartbeats count as led only once the peering's top entry is its UID.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { type KopfPeeringObject, peerIdentities, peeringAsLease, topPeer } from '../support/kopf-peering.ts';
import { kopfPeering } from '../support/operators.ts';
import { checkSplitBrain, type ObservedWrite } from '../support/split-brain.ts';

const peering = (status: KopfPeeringObject['status']): KopfPeeringObject => ({ metadata: { name: 'kopf-operator' }, status });
const entry = (priority: number) => ({ priority, lifetime: 60, lastseen: '2026-12-01T00:00:00.000000+00:00' });

describe('topPeer', () => {
  it('is the identity of the entry of the highest priority', () => {
    assert.equal(topPeer(peering({ 'uid-a': entry(100), 'uid-b': entry(99) })), 'uid-a');
    assert.equal(topPeer(peering({ 'uid-a': null, 'uid-b': entry(99), 'uid-c': entry(-3) })), 'uid-b', 'a removed (null) entry runs nothing');
  });

  it('is nobody where there is no entry, or two share the top priority (kopf pauses both)', () => {
    assert.equal(topPeer(peering(undefined)), undefined);
    assert.equal(topPeer(peering({ 'uid-a': null })), undefined);
    assert.equal(topPeer(peering({ 'uid-a': entry(100), 'uid-b': entry(100), 'uid-c': entry(1) })), undefined);
  });
});

describe('peerIdentities', () => {
  it('names every entry but removed ones', () => {
    assert.deepEqual(peerIdentities(peering({ 'uid-a': entry(100), 'uid-b': null })), new Set(['uid-a']));
    assert.deepEqual(peerIdentities(undefined), new Set());
  });
});

describe('peeringAsLease', () => {
  it('makes each write a revision of a Lease of the same name held by the top entry, none once deleted', () => {
    const write: ObservedWrite<KopfPeeringObject> = { type: 'MODIFIED', rv: 7n, object: peering({ 'uid-a': entry(99), 'uid-b': entry(98) }) };
    assert.deepEqual(peeringAsLease(write), { type: 'MODIFIED', rv: 7n, object: { metadata: { name: 'kopf-operator' }, spec: { holderIdentity: 'uid-a' } } });
    assert.equal(peeringAsLease({ ...write, type: 'DELETED' }).object.spec?.holderIdentity, undefined);
    assert.equal(peeringAsLease({ ...write, relisted: true }).relisted, true, 'a relisted write stays one: the checker flags what it may hide');
  });

  it('lets the split-brain check follow a handover, and catch a standby that ran before the top entry was its own', () => {
    const beat = (pod: string, uid: string, seq: number, rv: bigint): ObservedWrite<V1ConfigMap> => ({
      type: 'MODIFIED',
      rv,
      object: {
        metadata: { name: kopfPeering.heartbeat },
        data: { holder: pod, podUID: uid, processID: `process-${pod}`, lockIdentity: uid, seq: String(seq), time: '2026-12-01T00:00:00Z' },
      },
    });
    const writes: ObservedWrite<KopfPeeringObject>[] = [
      { type: 'ADDED', rv: 1n, object: peering({ 'uid-0': entry(100), 'uid-1': entry(99) }) },
      // the leader's clean exit sets its entry to null; the standby then resumes
      { type: 'MODIFIED', rv: 4n, object: peering({ 'uid-0': null, 'uid-1': entry(99) }) },
    ];
    const leases = writes.map(peeringAsLease);
    const clean = [beat('kopf-operator-0', 'uid-0', 1, 2n), beat('kopf-operator-0', 'uid-0', 2, 3n), beat('kopf-operator-1', 'uid-1', 1, 5n)];
    assert.deepEqual(checkSplitBrain({ lock: kopfPeering, configMaps: clean, leases }), []);
    const early = [beat('kopf-operator-0', 'uid-0', 1, 2n), beat('kopf-operator-1', 'uid-1', 1, 3n)];
    assert.deepEqual(
      checkSplitBrain({ lock: kopfPeering, configMaps: early, leases }).map((violation) => violation.kind),
      ['not-holder'],
    );
  });
});
