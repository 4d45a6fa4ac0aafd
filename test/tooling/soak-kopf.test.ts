/**
 * How the soak keeps kopf-operator's two bare pods (test/bench/soak-kopf.ts):
 * a pod that goes is replaced by the next ordinal, below every replica before
 * it, and only once every live pod has joined the peering, so that no two
 * new pods start in a race for the top.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { joinedPeers, nextKopfPod } from '../bench/soak-kopf.ts';
import type { KopfPeeringObject } from '../support/kopf-peering.ts';
import type { Observed } from '../support/recorder.ts';

const running = (uid: string): V1Pod => ({ metadata: { uid }, status: { phase: 'Running' } });
const going = (uid: string): V1Pod => ({ metadata: { uid, deletionTimestamp: new Date(0) }, status: { phase: 'Running' } });
const pods = (entries: [string, V1Pod | undefined][]) => new Map(entries);

describe('nextKopfPod', () => {
  it('makes kopf-operator-0 first, and kopf-operator-1 only once the first has joined the peering', () => {
    assert.equal(nextKopfPod([], pods([]), new Set()), 'kopf-operator-0');
    assert.equal(nextKopfPod(['kopf-operator-0'], pods([]), new Set()), undefined, 'created, not seen yet');
    assert.equal(nextKopfPod(['kopf-operator-0'], pods([['kopf-operator-0', running('u0')]]), new Set()), undefined, 'running, no entry yet');
    assert.equal(nextKopfPod(['kopf-operator-0'], pods([['kopf-operator-0', running('u0')]]), new Set(['u0'])), 'kopf-operator-1');
  });

  it('makes none while two live pods run', () => {
    const both = pods([
      ['kopf-operator-0', running('u0')],
      ['kopf-operator-1', running('u1')],
    ]);
    assert.equal(nextKopfPod(['kopf-operator-0', 'kopf-operator-1'], both, new Set(['u0', 'u1'])), undefined);
  });

  it('replaces a pod going, gone or ended with the next ordinal, never a name used before', () => {
    const created = ['kopf-operator-0', 'kopf-operator-1'];
    const joined = new Set(['u0', 'u1']);
    const terminating = pods([
      ['kopf-operator-0', going('u0')],
      ['kopf-operator-1', running('u1')],
    ]);
    assert.equal(nextKopfPod(created, terminating, joined), 'kopf-operator-2', 'as a ReplicaSet does, at once: a pod going counts no more');
    const gone = pods([
      ['kopf-operator-0', undefined],
      ['kopf-operator-1', running('u1')],
    ]);
    assert.equal(nextKopfPod(created, gone, joined), 'kopf-operator-2');
    const failed = pods([
      ['kopf-operator-0', { metadata: { uid: 'u0' }, status: { phase: 'Failed' } }],
      ['kopf-operator-1', running('u1')],
    ]);
    assert.equal(nextKopfPod(created, failed, joined), 'kopf-operator-2');
  });

  it('replaces two pods gone at once (a node drained) one after the other', () => {
    const created = ['kopf-operator-0', 'kopf-operator-1'];
    const drained = pods([
      ['kopf-operator-0', going('u0')],
      ['kopf-operator-1', going('u1')],
    ]);
    assert.equal(nextKopfPod(created, drained, new Set(['u0', 'u1'])), 'kopf-operator-2');
    const after = [...created, 'kopf-operator-2'];
    assert.equal(nextKopfPod(after, drained, new Set(['u0', 'u1'])), undefined, 'the first replacement has not joined');
    drained.set('kopf-operator-2', running('u2'));
    assert.equal(nextKopfPod(after, drained, new Set(['u2'])), 'kopf-operator-3');
  });
});

describe('joinedPeers', () => {
  const write = (type: Observed<KopfPeeringObject>['type'], status: KopfPeeringObject['status'], name = 'kopf-operator'): Observed<KopfPeeringObject> => ({
    type,
    rv: 1n,
    at: 0,
    object: { metadata: { name }, status },
  });

  it("names the UIDs with an entry in the peering's last revision", () => {
    assert.deepEqual(joinedPeers({ kopfPeerings: [] }), new Set());
    const status = { u0: { priority: 100 }, u1: null };
    assert.deepEqual(joinedPeers({ kopfPeerings: [write('ADDED', status), write('ADDED', { other: { priority: 1 } }, 'another')] }), new Set(['u0']));
    assert.deepEqual(joinedPeers({ kopfPeerings: [write('ADDED', status), write('DELETED', status)] }), new Set());
  });
});
