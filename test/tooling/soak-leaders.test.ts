/**
 * The soak's look at who leads (test/bench/soak-leaders.ts) and its reading
 * of the hooks' watch metrics (soak-samples.ts), on hand-made recordings.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { DEAD_HOLDER_GRACE_MS, HEARTBEAT_SILENCE_MS, LeaderTracker, soakLockOf } from '../bench/soak-leaders.ts';
import { heapFigures, watchStates } from '../bench/soak-samples.ts';
import type { KopfPeeringObject } from '../support/kopf-peering.ts';
import { emptyRecording, type Observed, type Recording } from '../support/recorder.ts';

let rv = 0n;
const lock = (pod: string, at: number): Observed<V1ConfigMap> => ({
  type: 'ADDED',
  rv: ++rv,
  at,
  object: { metadata: { name: 'lfl-operator-lock', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod, uid: `uid-${pod}` }] } } as V1ConfigMap,
});
const lockDeleted = (at: number): Observed<V1ConfigMap> => ({ type: 'DELETED', rv: ++rv, at, object: { metadata: { name: 'lfl-operator-lock' } } });
const beat = (pod: string, at: number): Observed<V1ConfigMap> => ({
  type: 'MODIFIED',
  rv: ++rv,
  at,
  object: { metadata: { name: 'lfl-operator-lock-heartbeat' }, data: { holder: pod, seq: '1', time: new Date(at).toISOString() } },
});
const running: V1Pod = { status: { phase: 'Running' } };

const recording = (): Recording => emptyRecording('ns', []);

const peering = (at: number, status: KopfPeeringObject['status'], type: 'ADDED' | 'MODIFIED' = 'MODIFIED'): Observed<KopfPeeringObject> => ({
  type,
  rv: ++rv,
  at,
  object: { metadata: { name: 'kopf-operator' }, status },
});
const kopfBeat = (pod: string, at: number): Observed<V1ConfigMap> => ({
  type: 'MODIFIED',
  rv: ++rv,
  at,
  object: { metadata: { name: 'kopf-operator-heartbeat' }, data: { holder: pod, seq: '1', time: new Date(at).toISOString() } },
});
const podSeen = (name: string, uid: string, at: number): Observed<V1Pod> => ({
  type: 'ADDED',
  rv: ++rv,
  at,
  object: { metadata: { name, uid }, status: { phase: 'Running' } },
});
const entry = (priority: number) => ({ priority, lifetime: 60, lastseen: '2026-12-01T00:00:00.000000+00:00' });

describe('LeaderTracker', () => {
  it('counts the holder as leading only while its heartbeats come', () => {
    const rec = recording();
    rec.podNow.set('a', running);
    rec.configMaps.push(lock('a', 1_000), beat('a', 1_000));
    const tracker = new LeaderTracker(rec, soakLockOf('lfl-operator'));
    assert.deepEqual(tracker.look(1_500), { leader: 'a', holder: 'a' });
    assert.deepEqual(tracker.look(1_000 + HEARTBEAT_SILENCE_MS + 1), { leader: undefined, holder: 'a' }, 'silent: not leading');
    rec.configMaps.push(beat('b', 5_000));
    assert.equal(tracker.look(5_100).leader, undefined, 'heartbeats of a pod the lock does not name make no leader');
    rec.configMaps.push(lockDeleted(6_000), lock('b', 6_100), beat('b', 6_200));
    assert.deepEqual(tracker.look(6_300), { leader: 'b', holder: 'b' });
  });

  it('says once that the lock is left held by a pod that can never run, and only after the grace', () => {
    const rec = recording();
    rec.podNow.set('a', running);
    rec.configMaps.push(lock('a', 0));
    const tracker = new LeaderTracker(rec, soakLockOf('lfl-operator'));
    assert.equal(tracker.look(1_000).newlyLeftHeld, undefined);
    rec.podNow.set('a', { status: { phase: 'Failed' } });
    assert.equal(tracker.look(2_000).newlyLeftHeld, undefined, 'the grace starts');
    assert.equal(tracker.look(2_000 + DEAD_HOLDER_GRACE_MS - 1).newlyLeftHeld, undefined, 'within the grace');
    assert.equal(tracker.look(2_000 + DEAD_HOLDER_GRACE_MS).newlyLeftHeld, 'a');
    assert.equal(tracker.look(3_000 + DEAD_HOLDER_GRACE_MS).newlyLeftHeld, undefined, 'counted once');
  });

  it('starts the grace again when the holder runs or the lock is freed in time', () => {
    const rec = recording();
    rec.configMaps.push(lock('a', 0));
    const tracker = new LeaderTracker(rec, soakLockOf('lfl-operator'));
    assert.equal(tracker.look(1_000).newlyLeftHeld, undefined, 'a pod gone (never seen running) starts the grace');
    rec.configMaps.push(lockDeleted(30_000));
    assert.equal(tracker.look(30_000).holder, undefined);
    rec.configMaps.push(lock('a', 40_000));
    assert.equal(tracker.look(40_000).newlyLeftHeld, undefined);
    assert.equal(
      tracker.look(40_000 + DEAD_HOLDER_GRACE_MS - 1).newlyLeftHeld,
      undefined,
      'the grace counts from the first look that sees the lock name it again',
    );
    assert.equal(tracker.look(40_000 + DEAD_HOLDER_GRACE_MS).newlyLeftHeld, 'a');
  });
});

describe('LeaderTracker on kopf-operator', () => {
  it("counts the pod whose UID is the peering's top entry as leading while its heartbeats come", () => {
    const rec = recording();
    rec.pods.push(podSeen('kopf-operator-0', 'uid-0', 0), podSeen('kopf-operator-1', 'uid-1', 0));
    for (const pod of ['kopf-operator-0', 'kopf-operator-1']) rec.podNow.set(pod, running);
    rec.kopfPeerings.push(peering(1_000, { 'uid-0': entry(100), 'uid-1': entry(99) }, 'ADDED'));
    rec.configMaps.push(kopfBeat('kopf-operator-0', 1_000));
    const tracker = new LeaderTracker(rec, soakLockOf('kopf-operator'));
    assert.deepEqual(tracker.look(1_500), { leader: 'kopf-operator-0', holder: 'kopf-operator-0' });
    rec.configMaps.push(kopfBeat('kopf-operator-1', 2_000));
    assert.equal(tracker.look(2_100).leader, 'kopf-operator-0', "the standby's heartbeats make it no leader while the top entry is not its own");
    // the leader's clean exit sets its entry to null; the standby resumes
    rec.kopfPeerings.push(peering(3_000, { 'uid-0': null, 'uid-1': entry(99) }));
    rec.configMaps.push(kopfBeat('kopf-operator-1', 3_100));
    assert.deepEqual(tracker.look(3_200), { leader: 'kopf-operator-1', holder: 'kopf-operator-1' });
    rec.kopfPeerings.push(peering(4_000, { 'uid-1': entry(99), 'uid-2': entry(98) }));
    assert.equal(tracker.look(4_100).holder, 'kopf-operator-1', 'a replacement joins below the leader');
  });

  it("names a UID whose pod is not seen yet by the UID, and its pod's name once it is", () => {
    const rec = recording();
    rec.kopfPeerings.push(peering(0, { 'uid-0': entry(100) }, 'ADDED'));
    const tracker = new LeaderTracker(rec, soakLockOf('kopf-operator'));
    assert.equal(tracker.look(1_000).holder, 'uid-0');
    rec.pods.push(podSeen('kopf-operator-0', 'uid-0', 1_500));
    rec.podNow.set('kopf-operator-0', running);
    assert.equal(tracker.look(2_000).holder, 'kopf-operator-0');
  });

  it('says once that the peering is left held by an entry of a pod that can never run, kept on top past the grace', () => {
    const rec = recording();
    rec.pods.push(podSeen('kopf-operator-0', 'uid-0', 0), podSeen('kopf-operator-1', 'uid-1', 0));
    rec.podNow.set('kopf-operator-0', running);
    rec.podNow.set('kopf-operator-1', running);
    rec.kopfPeerings.push(peering(0, { 'uid-0': entry(100), 'uid-1': entry(99) }, 'ADDED'));
    const tracker = new LeaderTracker(rec, soakLockOf('kopf-operator'));
    assert.equal(tracker.look(1_000).newlyLeftHeld, undefined);
    // killed without kopf's cleanup, its pod gone: the entry stays on top and the standby stays paused
    rec.podNow.set('kopf-operator-0', undefined);
    assert.equal(tracker.look(2_000).newlyLeftHeld, undefined, 'the grace starts');
    assert.equal(tracker.look(2_000 + DEAD_HOLDER_GRACE_MS).newlyLeftHeld, 'kopf-operator-0');
    assert.equal(tracker.look(3_000 + DEAD_HOLDER_GRACE_MS).newlyLeftHeld, undefined, 'counted once');
    rec.kopfPeerings.push(peering(4_000 + DEAD_HOLDER_GRACE_MS, { 'uid-1': entry(99) }));
    assert.deepEqual(tracker.look(5_000 + DEAD_HOLDER_GRACE_MS), { leader: undefined, holder: 'kopf-operator-1' });
  });

  it('reads the split-brain history off the peering, as a Lease held by the top entry', () => {
    const rec = recording();
    rec.kopfPeerings.push(peering(0, { 'uid-0': entry(100), 'uid-1': entry(99) }, 'ADDED'));
    const { lock, leases } = soakLockOf('kopf-operator').history(rec);
    assert.equal(lock.leaseIdentity, 'uid');
    assert.deepEqual(
      leases.map((lease) => [lease.object.metadata?.name, lease.object.spec?.holderIdentity]),
      [['kopf-operator', 'uid-0']],
    );
  });
});

describe('watchStates', () => {
  it("reads each watch's state off a metrics page", () => {
    const page = [
      '# HELP leaderhook_hook_watch_up 1 while the watch is connected, 0 while it reconnects.',
      '# TYPE leaderhook_hook_watch_up gauge',
      'leaderhook_hook_watch_up{watch="configmaps"} 1',
      'leaderhook_hook_watch_up{watch="leases"} 0',
      'leaderhook_hook_lock_wait_seconds{lock="x",holder="y",state="running"} 3',
    ].join('\n');
    assert.deepEqual(
      [...watchStates(page)],
      [
        ['configmaps', true],
        ['leases', false],
      ],
    );
    assert.equal(watchStates('not metrics').size, 0);
  });
});

describe('heapFigures', () => {
  it('reads the heap in use and the major collections off a metrics page, 0 collections before the first', () => {
    const page = [
      '# TYPE nodejs_heap_size_used_bytes gauge',
      'nodejs_heap_size_used_bytes 12845056',
      'nodejs_heap_size_total_bytes 14680064',
      'nodejs_gc_duration_seconds_count{kind="minor"} 812',
      'nodejs_gc_duration_seconds_count{kind="major"} 4',
    ].join('\n');
    assert.deepEqual(heapFigures(page), { heapUsedBytes: 12845056, majorGcs: 4 });
    assert.deepEqual(heapFigures('nodejs_heap_size_used_bytes 100\nnodejs_gc_duration_seconds_count{kind="minor"} 3'), { heapUsedBytes: 100, majorGcs: 0 });
    assert.equal(heapFigures('leaderhook_hook_watch_up{watch="leases"} 1'), undefined, 'a page without the heap gives none');
  });
});
