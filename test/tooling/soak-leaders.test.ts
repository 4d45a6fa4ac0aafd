/**
 * The soak's look at who leads (test/bench/soak-leaders.ts) and its reading
 * of the hooks' watch metrics (soak-samples.ts), on hand-made recordings.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { DEAD_HOLDER_GRACE_MS, HEARTBEAT_SILENCE_MS, LeaderTracker } from '../bench/soak-leaders.ts';
import { heapFigures, watchStates } from '../bench/soak-samples.ts';
import { lockOf } from '../support/failover-trial.ts';
import type { Observed, Recording } from '../support/recorder.ts';

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

function recording(): Recording {
  return { configMaps: [], leases: [], pods: [], events: [], logs: [], podNow: new Map(), interruptions: [], errors: [] } as unknown as Recording;
}

describe('LeaderTracker', () => {
  it('counts the holder as leading only while its heartbeats come', () => {
    const rec = recording();
    rec.podNow.set('a', running);
    rec.configMaps.push(lock('a', 1_000), beat('a', 1_000));
    const tracker = new LeaderTracker(rec, lockOf('lfl-operator'));
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
    const tracker = new LeaderTracker(rec, lockOf('lfl-operator'));
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
    const tracker = new LeaderTracker(rec, lockOf('lfl-operator'));
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
