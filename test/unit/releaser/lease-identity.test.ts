/**
 * Which Leases held by identity are this pod's (src/releaser/lease-identity.ts):
 * the kubelet's hostname rule, the names an identity can start with, and the
 * live-list proof that no other pod carries the same one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Lease, OwnerReference, Pod } from '../../../src/kube/types.ts';
import {
  decideIdentityHolderRelease,
  decideIdentityRelease,
  heldByName,
  identityHost,
  isPodName,
  kubeletHostname,
  leaseExpired,
  mayCarryName,
  namedPodHoldsOn,
  ownIdentityNames,
} from '../../../src/releaser/lease-identity.ts';

const running = { phase: 'Running', containerStatuses: [{ name: 'manager', state: { running: {} } }] } as Pod['status'];
const pod = (name: string, spec: Partial<NonNullable<Pod['spec']>> = {}, uid = `uid-${name}`, status = running): Pod => ({
  metadata: { name, uid },
  spec: { containers: [{ name: 'manager' }], ...spec },
  status,
});
const lease = (holderIdentity?: string, extra: Partial<Lease> = {}): Lease => ({
  metadata: { name: 'l', resourceVersion: '3' },
  spec: holderIdentity === undefined ? {} : { holderIdentity },
  ...extra,
});
/** 70 characters: the kubelet cuts it to 63 and drops the trailing '-'. */
const longName = `${'operator-with-a-very-long-deployment-name-'.padEnd(62, 'x')}-7d9f8-abcde`;

describe('kubeletHostname', () => {
  it('is the pod name, or spec.hostname when set', () => {
    assert.equal(kubeletHostname(pod('op-0')), 'op-0');
    assert.equal(kubeletHostname(pod('op-0', { hostname: 'operator' })), 'operator');
  });
  it("is undefined with hostNetwork: the node's", () => assert.equal(kubeletHostname(pod('op-0', { hostNetwork: true })), undefined));
  it('cuts a name over 63 characters and drops the trailing - or . as the kubelet does', () => {
    assert.equal(longName.length > 63, true);
    const cut = kubeletHostname(pod(longName));
    assert.equal(cut, longName.slice(0, 62));
    assert.ok(!cut?.endsWith('-'));
  });
  it('takes spec.hostnameOverride first', () => {
    const spec = { hostname: 'operator', hostnameOverride: 'op.example.com' } as Partial<NonNullable<Pod['spec']>>;
    assert.equal(kubeletHostname(pod('op-0', spec)), 'op.example.com');
  });
});

describe('identityHost', () => {
  it("is what precedes the first '_', else all of it", () => {
    assert.equal(identityHost('op-0_4f1c2a9e-7b1d'), 'op-0');
    assert.equal(identityHost('op-0'), 'op-0');
    assert.equal(identityHost('op-0_a_b'), 'op-0');
  });
});

describe('ownIdentityNames', () => {
  it('is the pod name and its hostname', () => {
    assert.deepEqual(ownIdentityNames(pod('op-0')), ['op-0']);
    assert.deepEqual(ownIdentityNames(pod('op-0', { hostname: 'operator' })), ['op-0', 'operator']);
    assert.deepEqual(ownIdentityNames(pod(longName)), [longName, longName.slice(0, 62)]);
  });
  it('adds the hostname the process sees only when it is an FQDN of the pod hostname', () => {
    assert.deepEqual(ownIdentityNames(pod('op-0', { hostname: 'operator', subdomain: 'ops' }), 'operator.ops.ns.svc.cluster.local'), [
      'op-0',
      'operator',
      'operator.ops.ns.svc.cluster.local',
    ]);
    assert.deepEqual(ownIdentityNames(pod('op-0'), 'build-machine'), ['op-0'], 'a hook run outside a pod sees another host');
  });
  it("is empty with hostNetwork: the node's hostname is shared with every such pod there", () => {
    assert.deepEqual(ownIdentityNames(pod('op-0', { hostNetwork: true })), []);
  });
});

describe('heldByName', () => {
  const names = ['op-0', 'operator'];
  it('matches an identity that is a name, or starts with one and _', () => {
    assert.equal(heldByName(lease('op-0'), names), true);
    assert.equal(heldByName(lease('op-0_4f1c2a9e'), names), true);
    assert.equal(heldByName(lease('operator_4f1c2a9e'), names), true);
  });
  it('refuses a longer name sharing the prefix, and other identities', () => {
    assert.equal(heldByName(lease('op-01_4f1c'), names), false);
    assert.equal(heldByName(lease('op-0-abc'), names), false);
    assert.equal(heldByName(lease('node-1_4f1c'), names), false);
  });
  it('refuses an empty holder (already released) and a Lease with spec.strategy (coordinated leader election)', () => {
    assert.equal(heldByName(lease(''), names), false);
    assert.equal(heldByName(lease(undefined), names), false);
    assert.equal(heldByName({ metadata: { name: 'l' }, spec: { holderIdentity: 'op-0', strategy: 'OldestEmulationVersion' } }, names), false);
    assert.equal(heldByName(lease('_x'), ['']), false);
  });
  it('leaves a Lease owned by one pod to the ownerReference rule; two owners make it no lock', () => {
    const ref: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-op-0' };
    assert.equal(heldByName(lease('op-0', { metadata: { name: 'l', ownerReferences: [ref] } }), names), false);
    assert.equal(heldByName(lease('op-0', { metadata: { name: 'l', ownerReferences: [ref, { ...ref, name: 'op-1', uid: 'u1' }] } }), names), true);
  });
});

describe('mayCarryName', () => {
  it('by its name, its hostname or an FQDN of it', () => {
    assert.equal(mayCarryName(pod('op-1'), 'op-1'), true);
    assert.equal(mayCarryName(pod('op-1', { hostname: 'operator' }), 'operator'), true);
    assert.equal(mayCarryName(pod('op-1', { hostname: 'operator' }), 'operator.ops.ns.svc.cluster.local'), true);
    assert.equal(mayCarryName(pod('op-1'), 'op-10'), false);
  });
  it("with hostNetwork, by its node's name, or any name while it is not scheduled", () => {
    assert.equal(mayCarryName(pod('ds-1', { hostNetwork: true, nodeName: 'node-a' }), 'node-a'), true);
    assert.equal(mayCarryName(pod('ds-1', { hostNetwork: true, nodeName: 'node-a' }), 'operator'), false);
    assert.equal(mayCarryName(pod('ds-1', { hostNetwork: true }), 'operator'), true);
  });
});

describe('decideIdentityRelease', () => {
  const self = pod('op-0', { hostname: 'operator' });
  const finished = { phase: 'Failed', containerStatuses: [{ name: 'manager', state: { terminated: { exitCode: 1 } } }] } as Pod['status'];
  it('releases when no other pod can carry the name', () => {
    assert.deepEqual(decideIdentityRelease(lease('operator_abc'), { podUid: 'uid-op-0' }, [self, pod('op-1')]), { release: true });
  });
  it('keeps it when a replica shares spec.hostname', () => {
    const d = decideIdentityRelease(lease('operator_abc'), { podUid: 'uid-op-0' }, [self, pod('op-1', { hostname: 'operator' })]);
    assert.equal(d.release, false);
    assert.deepEqual(!d.release && d.others, ['op-1']);
  });
  it('keeps it when another replica is truncated to the same hostname', () => {
    const a = pod(longName);
    const b = pod(`${longName.slice(0, -5)}fghij`);
    const d = decideIdentityRelease(lease(`${longName.slice(0, 62)}_abc`), { podUid: `uid-${longName}` }, [a, b]);
    assert.equal(d.release, false);
  });
  it('keeps it when another pod is named as the identity (a POD_NAME identity of a pod whose name is our hostname)', () => {
    assert.equal(decideIdentityRelease(lease('operator'), { podUid: 'uid-op-0' }, [self, pod('operator')]).release, false);
  });
  it('does not count a pod whose every container has terminated: it can hold nothing', () => {
    const done = pod('op-1', { hostname: 'operator' }, 'uid-op-1', finished);
    assert.deepEqual(decideIdentityRelease(lease('operator_abc'), { podUid: 'uid-op-0' }, [self, done]), { release: true });
  });
  it('counts a pod whose phase alone says Failed while a container still runs', () => {
    const phaseOnly = pod('op-1', { hostname: 'operator' }, 'uid-op-1', { ...running, phase: 'Failed' });
    assert.equal(decideIdentityRelease(lease('operator_abc'), { podUid: 'uid-op-0' }, [self, phaseOnly]).release, false);
  });
});

describe('decideIdentityHolderRelease (R2 for a Lease held by identity)', () => {
  const finished = { phase: 'Failed', reason: 'Evicted', containerStatuses: [{ name: 'manager', state: { terminated: { exitCode: 137 } } }] } as Pod['status'];
  it('releases when the one pod that can carry the name has finished', () => {
    const d = decideIdentityHolderRelease(lease('op-0_abc'), [pod('op-0', {}, 'u0', finished), pod('op-1')]);
    assert.equal(d.release, true);
    assert.match(d.message, /op-0 Failed \(Evicted\)/);
  });
  it('waits while any pod that can carry the name has not finished: a shared spec.hostname', () => {
    const pods = [pod('op-0', { hostname: 'operator' }, 'u0', finished), pod('op-1', { hostname: 'operator' })];
    const d = decideIdentityHolderRelease(lease('operator_abc'), pods);
    assert.equal(d.release, false);
    assert.deepEqual(!d.release && d.carriers.map((p) => p.metadata?.name), ['op-0', 'op-1']);
  });
  it('waits while the phase alone says Failed', () => {
    assert.equal(decideIdentityHolderRelease(lease('op-0_abc'), [pod('op-0', {}, 'u0', { ...running, phase: 'Failed' })]).release, false);
  });
  it('does nothing when no pod can carry the name: the holder may be gone, or in another namespace (never R3)', () => {
    const d = decideIdentityHolderRelease(lease('op-0_abc'), [pod('op-1')]);
    assert.equal(d.release, false);
    assert.match(d.message, /left to expire/);
  });
});

describe("the pod of the identity's name, read alone before any list", () => {
  it('settles the look while it has not finished: it can carry the name, so nothing may be released', () => {
    const p = pod('op-0');
    assert.equal(namedPodHoldsOn(p), true);
    // the decision over every pod agrees: that pod is a carrier not finished
    assert.equal(decideIdentityHolderRelease(lease('op-0_abc'), [p, pod('op-1')]).release, false);
  });
  it('leaves the look to the list when it has finished or is missing', () => {
    const finished = { phase: 'Failed', containerStatuses: [{ name: 'manager', state: { terminated: { exitCode: 1 } } }] } as Pod['status'];
    assert.equal(namedPodHoldsOn(pod('op-0', {}, 'u0', finished)), false);
    assert.equal(namedPodHoldsOn(undefined), false);
  });
  it('is read only for names a pod can have: never a path such as ".." or "a/b"', () => {
    for (const name of ['op-0', 'op-0.example', longName]) assert.equal(isPodName(name), true, name);
    for (const name of ['', '..', '.', 'a/b', 'Op-0', '-op', 'op-', 'a..b', 'x'.repeat(254)]) assert.equal(isPodName(name), false, name);
  });
});

describe('leaseExpired', () => {
  const at = (renewTime: string, leaseDurationSeconds = 15): Lease => ({
    metadata: { name: 'l' },
    spec: { holderIdentity: 'x', renewTime, leaseDurationSeconds },
  });
  const now = Date.parse('2026-01-01T00:00:20Z');
  it('is true once renewTime + duration has passed', () => {
    assert.equal(leaseExpired(at('2026-01-01T00:00:04.000000Z'), now), true);
    assert.equal(leaseExpired(at('2026-01-01T00:00:06.000000Z'), now), false);
  });
  it('is false when it cannot tell', () => {
    assert.equal(leaseExpired({ metadata: { name: 'l' }, spec: { holderIdentity: 'x' } }, now), false);
  });
});
