/**
 * kopf's peering entries (src/releaser/kopf-peering.ts): which POD_ID the
 * hook accepts as an identity only one pod can carry, and the merge patch it
 * removes an entry with.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KopfPeering, Pod } from '../../../src/kube/types.ts';
import { entryRemoval, hasPeerEntry, kopfIdentity, otherPeerIdentities } from '../../../src/releaser/kopf-peering.ts';

type EnvVar = NonNullable<NonNullable<Pod['spec']>['containers'][number]['env']>[number];
const fromField = (fieldPath: string): EnvVar => ({ name: 'POD_ID', valueFrom: { fieldRef: { fieldPath } } });
const pod = (operatorEnv: EnvVar[], sidecarEnv?: EnvVar[]): Pod => ({
  metadata: { name: 'kopf-0', uid: '7c0e5a52-1b7e-4f0c-9a57-3f2d1c0b9e11' },
  spec: {
    initContainers: [{ name: 'leaderhook', restartPolicy: 'Always', ...(sidecarEnv ? { env: sidecarEnv } : {}) }],
    containers: [{ name: 'operator', env: operatorEnv }],
  },
});

describe('kopfIdentity', () => {
  it("is the pod's UID when POD_ID comes from metadata.uid", () => {
    assert.deepEqual(kopfIdentity(pod([fromField('metadata.uid')])), { identity: '7c0e5a52-1b7e-4f0c-9a57-3f2d1c0b9e11' });
  });

  it('is nothing, with nothing to explain, when no container sets POD_ID', () => {
    assert.deepEqual(kopfIdentity(pod([{ name: 'OTHER', value: 'x' }])), {});
  });

  it('is refused, with the reason, for the pod name (kopf docs), a literal or a ConfigMap key', () => {
    const cases: [EnvVar, RegExp][] = [
      [fromField('metadata.name'), /fieldRef metadata\.name, not the pod's UID/],
      [{ name: 'POD_ID', value: 'operator' }, /a literal value, not the pod's UID/],
      [{ name: 'POD_ID', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }, /a ConfigMap or Secret key/],
    ];
    for (const [env, why] of cases) {
      const got = kopfIdentity(pod([env]));
      assert.equal(got.identity, undefined);
      assert.match(got.why ?? '', why);
      assert.match(got.why ?? '', /set POD_ID from metadata\.uid/);
    }
  });

  it('takes the last definition in a container, as the kubelet does', () => {
    assert.equal(kopfIdentity(pod([{ name: 'POD_ID', value: 'x' }, fromField('metadata.uid')])).identity, '7c0e5a52-1b7e-4f0c-9a57-3f2d1c0b9e11');
    assert.equal(kopfIdentity(pod([fromField('metadata.uid'), { name: 'POD_ID', value: 'x' }])).identity, undefined);
  });

  it('is refused when any other container sets POD_ID otherwise: which one runs kopf is unknown', () => {
    assert.equal(kopfIdentity(pod([fromField('metadata.uid')], [fromField('metadata.name')])).identity, undefined);
  });

  it('is refused for a pod without a UID (not read from the API)', () => {
    const p = pod([fromField('metadata.uid')]);
    delete p.metadata?.uid;
    assert.equal(kopfIdentity(p).identity, undefined);
  });
});

describe('peering entries', () => {
  const peering: KopfPeering = {
    metadata: { name: 'op', resourceVersion: '41' },
    status: { own: { priority: 100, lifetime: 60, lastseen: '2026-12-04T10:00:00+00:00' }, other: { priority: 99 }, gone: null },
  };

  it('has an entry only when it is set and not null', () => {
    assert.equal(hasPeerEntry(peering, 'own'), true);
    assert.equal(hasPeerEntry(peering, 'gone'), false);
    assert.equal(hasPeerEntry(peering, 'absent'), false);
    assert.equal(hasPeerEntry({ metadata: {} }, 'own'), false);
  });

  it('lists the other identities with an entry', () => {
    assert.deepEqual(otherPeerIdentities(peering, 'own'), ['other']);
  });

  it("removes an entry as kopf's clean exit does, guarded by the version read", () => {
    assert.deepEqual(entryRemoval(peering, 'own'), { metadata: { resourceVersion: '41' }, status: { own: null } });
  });
});
