/**
 * Wait reports read the locks of other pods through their read-only view
 * alone: a fake of that view and of the own locks is all they need.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { OwnerReference, Pod } from '../../../src/kube/types.ts';
import type { ContextWithoutClient } from '../../../src/releaser/context.ts';
import type { EventRecorder } from '../../../src/releaser/events.ts';
import type { ForeignLockView } from '../../../src/releaser/foreign-lock-view.ts';
import { noMetrics } from '../../../src/releaser/metrics.ts';
import { WaitReporter } from '../../../src/releaser/wait-reports.ts';
import { KnownPermissions } from '../../../src/releaser/permissions.ts';

const holder: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-1', uid: 'uid-holder' };
const holderPod: Pod = { metadata: { name: 'op-1', namespace: 'ns', uid: 'uid-holder' }, spec: { nodeName: 'node-a', containers: [] } };
const ownPod: Pod = { metadata: { name: 'op-0', namespace: 'ns', uid: 'uid-self' }, spec: { containers: [] } };

function reporter(view: ForeignLockView, now: number) {
  const emitted: { reason: string; type: string; message: string }[] = [];
  const events: EventRecorder = {
    emit: async (_target, reason, type, message) => void emitted.push({ reason, type, message }),
    emitOnBoth: async () => assert.fail('a wait report releases nothing'),
  };
  const ctx: ContextWithoutClient = {
    ns: 'ns',
    podName: 'op-0',
    podUid: 'uid-self',
    self: { name: 'op-0', namespace: 'ns', uid: 'uid-self' },
    log: pino({ level: 'silent' }),
    clock: { now: () => now },
    metrics: noMetrics,
    signal: new AbortController().signal,
    perms: new KnownPermissions(),
  };
  const evaluated: ForeignLockView[] = [];
  const foreign = {
    tracked: () => [view],
    evaluate: async (v: ForeignLockView) => void evaluated.push(v),
    isCurrent: (v: ForeignLockView) => v === view,
  };
  const waits = new WaitReporter(ctx, events, { foreign, own: { lockName: 'op-lock', holdsLock: false } }, 10_000);
  waits.start(ownPod);
  waits.stop();
  return { waits, emitted, evaluated };
}

describe('wait reports', () => {
  it("re-read the holder, then warn once of a crash-looping one, from the lock's view", async () => {
    const view: ForeignLockView = {
      kind: 'ConfigMap',
      name: 'op-lock',
      owner: holder,
      since: 0,
      isLock: true,
      holder: holderPod,
      decision: { release: false, state: 'crashLooping', message: 'holder pod op-1 is crash-looping on node node-a (3 restarts)' },
    };
    const { waits, emitted, evaluated } = reporter(view, 60_000);
    await waits.report();
    await waits.report();
    assert.deepEqual(evaluated, [view, view]);
    assert.equal(emitted.length, 1, JSON.stringify(emitted));
    assert.equal(emitted[0]?.reason, 'LeaderLockHeld');
    assert.equal(emitted[0]?.type, 'Warning');
    assert.match(emitted[0]?.message ?? '', /^Leader lock ConfigMap op-lock is held by pod op-1 \(crashLooping\): .* Waiting 60s\./);
  });

  it('say nothing of a ConfigMap that carries data', async () => {
    const view: ForeignLockView = {
      kind: 'ConfigMap',
      name: 'op-lock',
      owner: holder,
      since: 0,
      isLock: false,
      holder: holderPod,
      decision: { release: false, state: 'crashLooping', message: 'holder pod op-1 is crash-looping' },
    };
    const { waits, emitted } = reporter(view, 60_000);
    await waits.report();
    assert.deepEqual(emitted, []);
  });
});
