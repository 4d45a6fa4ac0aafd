import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConfigMap, Lease, OwnerReference, Pod } from '../../../src/kube/types.ts';
import {
  decideHolderRelease,
  decideOwnRelease,
  isConfigMapLock,
  isHolderFinished,
  leaseLockOwner,
  lockNameFromAnnotations,
  lockCandidateOwner,
  lockOwner,
  microTime,
  notFound,
  observeFromAnnotations,
  observeMode,
  releasedLease,
  sameWorkload,
} from '../../../src/releaser/rules.ts';

const owner: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-a' };

function lock(extra: Partial<ConfigMap> = {}, refs: OwnerReference[] = [owner]): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'op-lock', namespace: 'ns', uid: 'cm-1', resourceVersion: '7', ownerReferences: refs },
    ...extra,
  };
}

const terminated = (name: string) => ({ name, ready: false, restartCount: 0, image: 'x', imageID: '', state: { terminated: { exitCode: 0 } } });
const running = (name: string) => ({ name, ready: true, restartCount: 0, image: 'x', imageID: '', state: { running: { startedAt: '2026-01-01T00:00:00Z' } } });
const waiting = (name: string, reason: string) => ({ name, ready: false, restartCount: 5, image: 'x', imageID: '', state: { waiting: { reason } } });

function pod(init: { uid?: string; phase?: string; reason?: string; deletionTimestamp?: string; statuses?: Pod['status'] } = {}): Pod {
  return {
    metadata: {
      name: 'op-0',
      namespace: 'ns',
      uid: init.uid ?? 'uid-a',
      ...(init.deletionTimestamp ? { deletionTimestamp: init.deletionTimestamp } : {}),
    },
    spec: {
      nodeName: 'node-1',
      initContainers: [{ name: 'setup' }, { name: 'leaderhook', restartPolicy: 'Always' }],
      containers: [{ name: 'manager' }, { name: 'proxy' }],
    },
    status: {
      phase: init.phase ?? 'Running',
      ...(init.reason ? { reason: init.reason } : {}),
      initContainerStatuses: [terminated('setup'), running('leaderhook')],
      containerStatuses: [running('manager'), running('proxy')],
      ...init.statuses,
    },
  } as Pod;
}

const allTerminated: Pod['status'] = {
  initContainerStatuses: [terminated('setup'), terminated('leaderhook')],
  containerStatuses: [terminated('manager'), terminated('proxy')],
};

describe('lockCandidateOwner', () => {
  it('reads the owner from metadata alone; lockOwner also needs the data to be empty', () => {
    const withData = lock({ data: { 'config.yaml': 'x' } });
    assert.deepEqual(lockCandidateOwner(withData), owner);
    assert.equal(lockOwner(withData), undefined);
    assert.equal(lockCandidateOwner(lock({}, [owner, { ...owner, name: 'op-1', uid: 'uid-b' }])), undefined);
  });
});

describe('isConfigMapLock', () => {
  it('accepts operator-lib lock: one v1/Pod owner, no data', () => {
    assert.equal(isConfigMapLock(lock()), true);
    assert.deepEqual(lockOwner(lock()), owner);
  });
  it('accepts empty data maps (the API omits them anyway)', () => {
    assert.equal(isConfigMapLock(lock({ data: {}, binaryData: {} })), true);
  });
  it('refuses a ConfigMap with data: the pod own configuration', () => {
    assert.equal(isConfigMapLock(lock({ data: { 'config.yaml': 'x' } })), false);
  });
  it('refuses a ConfigMap with binaryData', () => {
    assert.equal(isConfigMapLock(lock({ binaryData: { blob: 'AAAA' } })), false);
  });
  it('refuses no owner, two owners, and non-Pod owners', () => {
    assert.equal(isConfigMapLock(lock({}, [])), false);
    assert.equal(isConfigMapLock(lock({}, [owner, { ...owner, name: 'op-1', uid: 'uid-b' }])), false);
    assert.equal(isConfigMapLock(lock({}, [{ ...owner, kind: 'ReplicaSet' }])), false);
    assert.equal(isConfigMapLock(lock({}, [{ ...owner, apiVersion: 'apps/v1' }])), false);
    assert.equal(isConfigMapLock(lock({}, [{ ...owner, uid: '' }])), false);
    assert.equal(isConfigMapLock(undefined), false);
  });
});

describe('leaseLockOwner (docs/design.md#leases-owned-by-a-pod)', () => {
  const pod: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-0' };
  const owned = (ownerReferences: OwnerReference[], spec: Lease['spec'] = { holderIdentity: 'op-0' }): Lease => ({
    metadata: { name: 'l', ownerReferences },
    spec,
  });
  it('is the single v1/Pod owner of a leader-for-life Lease', () => assert.deepEqual(leaseLockOwner(owned([pod])), pod));
  it('refuses two ownerReferences, a non-Pod owner, and an owner without name or UID', () => {
    assert.equal(leaseLockOwner(owned([pod, { ...pod, name: 'op-1', uid: 'uid-1' }])), undefined);
    assert.equal(leaseLockOwner(owned([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'op', uid: 'uid-d' }])), undefined);
    assert.equal(leaseLockOwner(owned([{ ...pod, uid: '' }])), undefined);
    assert.equal(leaseLockOwner(owned([])), undefined);
  });
  it('refuses a Lease of coordinated leader election (spec.strategy set)', () => {
    assert.equal(leaseLockOwner(owned([pod], { holderIdentity: 'op-0', strategy: 'OldestEmulationVersion' })), undefined);
  });
});

describe('decideOwnRelease (R1)', () => {
  const deadline = '2026-01-01T00:00:30Z';
  const at = (iso: string) => Date.parse(iso);
  it('releases when being deleted and well before deadline - margin', () => {
    const d = decideOwnRelease(pod({ deletionTimestamp: deadline }), 'uid-a', at('2026-01-01T00:00:05Z'), 2);
    assert.equal(d.release, true);
  });
  it('refuses when the own pod is gone', () => {
    const d = decideOwnRelease(undefined, 'uid-a', at('2026-01-01T00:00:05Z'), 2);
    assert.deepEqual([d.release, !d.release && d.refusal], [false, 'ownPodGone']);
  });
  it('refuses when a pod of the same name has another UID', () => {
    const d = decideOwnRelease(pod({ uid: 'uid-b', deletionTimestamp: deadline }), 'uid-a', at('2026-01-01T00:00:05Z'), 2);
    assert.equal(!d.release && d.refusal, 'ownPodReplaced');
  });
  it('refuses when the pod is not being deleted (sidecar restart, kubelet-initiated stop)', () => {
    const d = decideOwnRelease(pod(), 'uid-a', at('2026-01-01T00:00:05Z'), 2);
    assert.equal(!d.release && d.refusal, 'notBeingDeleted');
  });
  it('refuses exactly at deadline - margin, and later', () => {
    for (const t of ['2026-01-01T00:00:28Z', '2026-01-01T00:00:29.5Z', '2026-01-01T00:00:31Z']) {
      const d = decideOwnRelease(pod({ deletionTimestamp: deadline }), 'uid-a', at(t), 2);
      assert.equal(!d.release && d.refusal, 'pastDeadline', t);
    }
  });
  it('releases one millisecond before deadline - margin', () => {
    const d = decideOwnRelease(pod({ deletionTimestamp: deadline }), 'uid-a', at('2026-01-01T00:00:28Z') - 1, 2);
    assert.equal(d.release, true);
  });
  it('honours a larger margin', () => {
    const d = decideOwnRelease(pod({ deletionTimestamp: deadline }), 'uid-a', at('2026-01-01T00:00:25Z'), 10);
    assert.equal(!d.release && d.refusal, 'pastDeadline');
  });
  it('refuses an unparseable deletionTimestamp', () => {
    const d = decideOwnRelease(pod({ deletionTimestamp: 'soon' }), 'uid-a', 0, 2);
    assert.equal(!d.release && d.refusal, 'badDeletionTimestamp');
  });
  it('refuses when the own UID is unknown', () => {
    const d = decideOwnRelease(pod({ deletionTimestamp: deadline }), '', at('2026-01-01T00:00:05Z'), 2);
    assert.equal(d.release, false);
  });
});

describe('decideHolderRelease (R2, R3)', () => {
  it('R3: holder not found', () => {
    const d = decideHolderRelease(notFound, owner);
    assert.deepEqual([d.release, d.release && d.rule, d.release && d.reason], [true, 'R3', 'holderGone']);
  });
  it('R3: a new pod of the same name (another UID)', () => {
    const d = decideHolderRelease(pod({ uid: 'uid-new' }), owner);
    assert.deepEqual([d.release, d.release && d.reason], [true, 'holderReplaced']);
  });
  for (const reason of ['Evicted', 'Terminated', 'DeadlineExceeded', 'ProviderFailed', undefined]) {
    it(`R2: Failed${reason ? `/${reason}` : ''} with every container terminated`, () => {
      const d = decideHolderRelease(pod({ phase: 'Failed', ...(reason ? { reason } : {}), statuses: allTerminated }), owner);
      assert.deepEqual([d.release, d.release && d.rule], [true, 'R2']);
    });
  }
  it('R2: Succeeded with every container terminated', () => {
    const d = decideHolderRelease(pod({ phase: 'Succeeded', statuses: allTerminated }), owner);
    assert.equal(d.release && d.rule, 'R2');
  });
  it('refuses Failed with a regular container still running (phase written alone)', () => {
    const d = decideHolderRelease(
      pod({ phase: 'Failed', reason: 'Evicted', statuses: { ...allTerminated, containerStatuses: [terminated('proxy'), running('manager')] } }),
      owner,
    );
    assert.equal(d.release, false);
    assert.equal(!d.release && d.state, 'terminalContainersNotTerminated');
  });
  it('refuses Succeeded with the sidecar (init container) still running', () => {
    const d = decideHolderRelease(
      pod({ phase: 'Succeeded', statuses: { ...allTerminated, initContainerStatuses: [terminated('setup'), running('leaderhook')] } }),
      owner,
    );
    assert.equal(d.release, false);
  });
  it('refuses Failed with an ephemeral container still running', () => {
    const p = pod({ phase: 'Failed', statuses: { ...allTerminated, ephemeralContainerStatuses: [running('debugger')] } });
    (p.spec as NonNullable<Pod['spec']>).ephemeralContainers = [{ name: 'debugger' }];
    assert.equal(decideHolderRelease(p, owner).release, false);
  });
  it('refuses Failed when container statuses are missing (not written by the kubelet)', () => {
    assert.equal(decideHolderRelease(pod({ phase: 'Failed', statuses: { initContainerStatuses: [], containerStatuses: [] } }), owner).release, false);
    assert.equal(decideHolderRelease(pod({ phase: 'Failed', statuses: { ...allTerminated, containerStatuses: [terminated('proxy')] } }), owner).release, false);
  });
  it('refuses a container waiting in a terminal pod', () => {
    const d = decideHolderRelease(
      pod({ phase: 'Failed', statuses: { ...allTerminated, containerStatuses: [terminated('proxy'), waiting('manager', 'PodInitializing')] } }),
      owner,
    );
    assert.equal(d.release, false);
  });
  it('refuses a running holder', () => {
    const d = decideHolderRelease(pod(), owner);
    assert.deepEqual([d.release, !d.release && d.state], [false, 'running']);
  });
  it('refuses a crash-looping holder (a restarted operator keeps its lock)', () => {
    const d = decideHolderRelease(pod({ statuses: { containerStatuses: [waiting('manager', 'CrashLoopBackOff'), running('proxy')] } }), owner);
    assert.deepEqual([d.release, !d.release && d.state], [false, 'crashLooping']);
  });
  it('refuses a holder on a NotReady node (status is stale)', () => {
    const p = pod({ statuses: { conditions: [{ type: 'Ready', status: 'False' }] } });
    const d = decideHolderRelease(p, owner);
    assert.deepEqual([d.release, !d.release && d.state], [false, 'notReady']);
  });
  it('refuses a holder stuck Terminating with a container alive', () => {
    const d = decideHolderRelease(pod({ deletionTimestamp: '2026-01-01T00:00:30Z' }), owner);
    assert.deepEqual([d.release, !d.release && d.state], [false, 'terminating']);
  });
  it('refuses Running even when every container reads terminated (phase not terminal)', () => {
    assert.equal(decideHolderRelease(pod({ statuses: allTerminated }), owner).release, false);
  });
  it('isHolderFinished needs a container spec', () => {
    assert.equal(isHolderFinished({ metadata: { uid: 'uid-a' }, spec: { containers: [] }, status: { phase: 'Failed' } } as Pod), false);
  });
});

describe('releasedLease', () => {
  it('writes the leaderless record and keeps every other field', () => {
    const lease: Lease = {
      metadata: { name: 'op', namespace: 'ns', resourceVersion: '42', labels: { a: 'b' } },
      spec: {
        holderIdentity: 'op-0_abc',
        leaseDurationSeconds: 15,
        leaseTransitions: 3,
        acquireTime: '2026-01-01T00:00:00.000000Z',
        renewTime: '2026-01-01T00:00:10.000000Z',
        strategy: 'OldestEmulationVersion',
        preferredHolder: 'op-1',
      },
    };
    const now = Date.parse('2026-01-01T00:01:00.123Z');
    const out = releasedLease(lease, now);
    assert.deepEqual(out.spec, {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      leaseTransitions: 3,
      acquireTime: '2026-01-01T00:01:00.123000Z',
      renewTime: '2026-01-01T00:01:00.123000Z',
      strategy: 'OldestEmulationVersion',
      preferredHolder: 'op-1',
    });
    assert.equal(out.metadata?.resourceVersion, '42');
    assert.deepEqual(out.metadata?.labels, { a: 'b' });
    assert.equal(lease.spec?.holderIdentity, 'op-0_abc', 'input not mutated');
  });
  it('formats MicroTime with six fractional digits', () => {
    assert.equal(microTime(Date.parse('2026-05-06T07:08:09.010Z')), '2026-05-06T07:08:09.010000Z');
  });
});

describe('annotations and workloads', () => {
  it('reads observe and lock annotations', () => {
    const p = (annotations?: Record<string, string>) => ({ metadata: { ...(annotations ? { annotations } : {}) } }) as Pod;
    assert.equal(observeFromAnnotations(p({ 'leaderhook.io/observe': 'true' })), true);
    assert.equal(observeFromAnnotations(p({ 'leaderhook.io/observe': 'false' })), false);
    assert.equal(observeFromAnnotations(p()), undefined);
    // the flag (the webhook's observe mode) wins over an annotation that turns it off; an annotation can turn it on
    assert.equal(observeMode(p({ 'leaderhook.io/observe': 'false' }), true), true);
    assert.equal(observeMode(p({ 'leaderhook.io/observe': 'off' }), true), true);
    assert.equal(observeMode(p(), true), true);
    assert.equal(observeMode(undefined, true), true);
    assert.equal(observeMode(p({ 'leaderhook.io/observe': ' YES ' }), false), true);
    assert.equal(observeMode(p({ 'leaderhook.io/observe': 'false' }), false), false);
    assert.equal(observeMode(p(), false), false);
    assert.equal(lockNameFromAnnotations(p({ 'leaderhook.io/lock': ' my-lock ' })), 'my-lock');
    assert.equal(lockNameFromAnnotations(p({ 'leaderhook.io/lock': '' })), undefined);
  });
  it('treats pods of two ReplicaSets of one Deployment as one workload', () => {
    const a = { metadata: { labels: { app: 'op', 'pod-template-hash': '111' } } } as Pod;
    const b = { metadata: { labels: { app: 'op', 'pod-template-hash': '222' } } } as Pod;
    const c = { metadata: { labels: { app: 'other', 'pod-template-hash': '222' } } } as Pod;
    assert.equal(sameWorkload(a, b), true);
    assert.equal(sameWorkload(a, c), false);
    assert.equal(sameWorkload({ metadata: {} } as Pod, { metadata: {} } as Pod), false);
  });
});
