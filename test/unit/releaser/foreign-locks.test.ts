/**
 * A foreign lock whose holder still runs: kept, with a debug line that says
 * why when debug logging is on, and nothing built for it when it is off.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../../src/kube/client.ts';
import type { ConfigMap, OwnerReference, Pod } from '../../../src/kube/types.ts';
import { createLineLogger, type LogFields, type Logger } from '../../../src/line-log.ts';
import type { HookContext } from '../../../src/releaser/context.ts';
import { eventRecorder } from '../../../src/releaser/events.ts';
import { ForeignLocks } from '../../../src/releaser/foreign-locks.ts';
import { noMetrics } from '../../../src/releaser/metrics.ts';
import { KnownPermissions, permissionKey } from '../../../src/releaser/permissions.ts';

const holder: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-1', uid: 'uid-holder' };
const lock: ConfigMap = { metadata: { name: 'op-lock', namespace: 'ns', uid: 'cm-1', resourceVersion: '7', ownerReferences: [holder] } };
const runningHolder: Pod = {
  metadata: { name: 'op-1', namespace: 'ns', uid: 'uid-holder' },
  spec: { nodeName: 'node-a', containers: [{ name: 'manager' }] },
  status: { phase: 'Running' },
};

/** Tracks `lock` and waits for its first evaluation, its holder running, with `log`; the holder is not watched (no pods/watch). */
async function evaluateKeptLock(log: Logger): Promise<void> {
  const client = {
    getConfigMap: async () => lock,
    getPod: async () => runningHolder,
  } as unknown as KubeClient;
  const ctx: HookContext = {
    client,
    ns: 'ns',
    podName: 'op-0',
    podUid: 'uid-self',
    self: { name: 'op-0', namespace: 'ns', uid: 'uid-self' },
    log,
    clock: { now: () => 0 },
    metrics: noMetrics,
    signal: new AbortController().signal,
    perms: new KnownPermissions(new Map([[permissionKey('pods', 'watch'), false]])),
  };
  const foreign = new ForeignLocks(ctx, {
    client,
    events: eventRecorder(ctx),
    cache: { subscribe: () => {}, put: () => assert.fail('the lock keeps its holder') },
    watchPod: () => assert.fail('the hook may not watch pods'),
    observe: false,
  });
  // upsert() evaluates in the background; the evaluation has logged once the tracker holds its decision.
  foreign.upsert(lock, holder);
  const [tracker] = foreign.tracked();
  for (let turn = 0; tracker?.decision === undefined && turn < 100; turn++) await new Promise(setImmediate);
  foreign.stop();
  assert.deepEqual(tracker?.decision, { release: false, state: 'running', message: 'holder pod op-1 is Running on node node-a' });
}

describe('ForeignLocks, a lock whose holder runs', () => {
  it('logs at debug why the lock is kept', async () => {
    const lines: Record<string, unknown>[] = [];
    await evaluateKeptLock(createLineLogger('release-hook', 'debug', (line) => lines.push(JSON.parse(line))));
    const kept = lines.filter((l) => l.msg === 'holder read live: holder pod op-1 is Running on node node-a; lock kept');
    assert.equal(kept.length, 1, JSON.stringify(lines));
    assert.deepEqual(
      { lock: kept[0]?.lock, holder: kept[0]?.holder, holderState: kept[0]?.holderState },
      { lock: 'ConfigMap/op-lock', holder: 'op-1', holderState: 'running' },
    );
  });

  it('builds no debug line when debug is off', async () => {
    const debugCalls: LogFields[] = [];
    const log: Logger = {
      ...createLineLogger('release-hook', 'info', () => {}),
      debug: (fields) => debugCalls.push(fields),
      child: () => log,
    };
    await evaluateKeptLock(log);
    assert.deepEqual(debugCalls, []);
  });
});
