/**
 * The deadlock leaderhook exists for, driven by the real kubelet: a
 * leader-for-life leader pod ends Failed (activeDeadlineSeconds, reason
 * DeadlineExceeded) and is never deleted, so the garbage collector never
 * frees its lock and the standby would wait forever. With leaderhook
 * installed from deploy/, the standby's hook sees the holder Failed with every
 * container terminated (R2) and frees the lock: the standby leads while the
 * old pod object still exists. The same for controller-runtime's Lease, held
 * as `hostname_uuid` with the hostname the kubelet gives the leader (here a
 * spec.hostname no other pod has), and for the Leases client-go's
 * LeaderElector and the Java Operator SDK hold as the pod's name: the
 * standby's hook writes the leaderless record (R2 for Leases held by
 * identity) and the standby leads before the lease would have run out;
 * without leaderhook (the controls), only once it has.
 *
 * Needs the leaderhook and operator images (scripts/build-local-image.sh,
 * test/operators/build.sh).
 */
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { annotations } from '../../src/annotations.ts';
import { connectTestCluster, coordination, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { grantReleaseHook, INJECTION_LABEL, installLeaderhook, readLflLock } from '../support/leaderhook.ts';
import { applyOperatorRbac, OPERATOR_CONTAINER, operatorManifest } from '../support/operators.ts';
import { waitFor } from '../support/wait.ts';

connectTestCluster();

const LOCK = 'lfl-operator-lock';
const DEADLINE_SECONDS = 25;
/** The Lease leaders' grace period in leaseHolderFailed. */
const LEADER_GRACE_SECONDS = 2;

/** The lfl-operator pod of test/operators as a bare pod, without the POD_NAME the webhook adds. */
function operatorPod(name: string, activeDeadlineSeconds?: number, operator = 'lfl-operator', extraSpec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  const { metadata, spec } = operatorManifest(operator, { withoutPodNameEnv: true }).spec.template;
  return {
    metadata: { ...metadata, name },
    spec: { ...spec!, restartPolicy: 'Never', ...(activeDeadlineSeconds ? { activeDeadlineSeconds } : {}), ...extraSpec },
  };
}

/** A MicroTime as client-node hands it over (a string on the wire, typed as a Date), in ms. */
const msOf = (time: Date | string | undefined) => (time === undefined ? Number.NaN : new Date(time).getTime());

const lockOwner = async (namespace: string) => (await readLflLock(namespace))?.holder;

describe('a leader that ends Failed without being deleted (kubelet: activeDeadlineSeconds)', () => {
  let uninstall: (() => Promise<void>) | undefined;
  let ns: TestNamespace;

  before(async () => {
    uninstall = await installLeaderhook();
    ns = await createTestNamespace('e2e-terminal', INJECTION_LABEL);
    await applyOperatorRbac(ns.name);
    await grantReleaseHook(ns.name, 'test-operator');
  });
  after(async () => {
    await ns?.cleanup();
    await uninstall?.();
  });

  test('the standby leads once the Failed holder is released by R2, while the holder still exists', async (t) => {
    const t0 = Date.now();
    const since = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;

    await core.createNamespacedPod({ namespace: ns.name, body: operatorPod('leader', DEADLINE_SECONDS) });
    const leader = await core.readNamespacedPod({ name: 'leader', namespace: ns.name });
    assert.ok(leader.metadata?.annotations?.['leaderhook.io/injected'], 'the webhook injected the pod');
    assert.equal(leader.spec?.initContainers?.at(-1)?.name, 'leaderhook-release');
    await waitFor('pod leader to hold the lock', async () => (await lockOwner(ns.name)) === 'leader', 90_000);
    t.diagnostic(`${since()} leader holds ${LOCK}`);

    await core.createNamespacedPod({ namespace: ns.name, body: operatorPod('standby') });
    await waitFor(
      'the standby to run',
      async () => (await core.readNamespacedPod({ name: 'standby', namespace: ns.name })).status?.phase === 'Running',
      90_000,
    );
    assert.equal(await lockOwner(ns.name), 'leader', 'one leader at a time');
    t.diagnostic(`${since()} standby running, waiting`);

    const failed = await waitFor(
      'the kubelet to fail the leader (DeadlineExceeded)',
      async () => {
        const pod = await core.readNamespacedPod({ name: 'leader', namespace: ns.name });
        return pod.status?.phase === 'Failed' ? pod : undefined;
      },
      (DEADLINE_SECONDS + 60) * 1000,
    );
    const failedAt = Date.now();
    t.diagnostic(`${since()} leader ${failed.status?.phase} (${failed.status?.reason})`);
    assert.equal(failed.status?.reason, 'DeadlineExceeded');

    await waitFor('the standby to hold the lock', async () => (await lockOwner(ns.name)) === 'standby', 60_000);
    const ledAt = Date.now();
    t.diagnostic(`${since()} standby holds ${LOCK}, ${((ledAt - failedAt) / 1000).toFixed(1)}s after the leader failed`);

    const old = await core.readNamespacedPod({ name: 'leader', namespace: ns.name });
    assert.equal(old.metadata?.uid, leader.metadata?.uid, 'the old leader pod still exists: GC did not free the lock');
    const events = await core.listNamespacedEvent({ namespace: ns.name });
    const released = events.items.filter((e: CoreV1Event) => e.reason === 'LeaderLockReleased');
    assert.ok(
      released.some((e) => /R2/.test(e.message ?? '')),
      `an R2 LeaderLockReleased Event: ${JSON.stringify(events.items.map((e) => [e.reason, e.message]))}`,
    );
    t.diagnostic(`event: ${released.find((e) => /R2/.test(e.message ?? ''))?.message}`);
  });
});

/** A Lease-based operator of test/operators, and how its Lease names the two pods of the test. */
interface LeaseOperator {
  operator: string;
  lease: string;
  /** The leader pod's spec beyond the template's (controller-runtime's identity comes from the hostname). */
  leaderSpec: Partial<NonNullable<V1Pod['spec']>>;
  /** Whether a holderIdentity names the pod `pod` (the leader) or `standby`. */
  names(identity: string | undefined, pod: 'leader' | 'standby'): boolean;
}

const leaseOperators: LeaseOperator[] = [
  {
    // controller-runtime names itself by os.Hostname(): the kubelet's hostname of the pod, here a spec.hostname no other pod has
    operator: 'lease-operator',
    lease: 'lease-operator-lock',
    leaderSpec: { hostname: 'leader-host' },
    names: (identity, pod) => identity?.startsWith(pod === 'leader' ? 'leader-host_' : 'standby_') === true,
  },
  // client-go's LeaderElector and the Java Operator SDK (fabric8) hold it as the pod's name
  { operator: 'client-go-operator', lease: 'client-go-operator-lock', leaderSpec: {}, names: (identity, pod) => identity === pod },
  { operator: 'josdk-operator', lease: 'josdk-operator-lock', leaderSpec: {}, names: (identity, pod) => identity === pod },
];

/**
 * A Lease leader failed by its kubelet and never deleted, with a standby
 * trying: with leaderhook, the standby's hook writes the leaderless record by
 * R2 and the standby takes the Lease before it would have expired; without
 * it (control), the standby takes it only once it has expired, and no
 * release is recorded.
 */
async function leaseHolderFailed(t: TestContext, { operator, lease: LEASE, leaderSpec, names }: LeaseOperator, withLeaderhook: boolean): Promise<void> {
  const ns = await createTestNamespace('e2e-terminal-lease', withLeaderhook ? INJECTION_LABEL : {});
  t.after(() => ns.cleanup());
  await applyOperatorRbac(ns.name);
  if (withLeaderhook) await grantReleaseHook(ns.name, 'test-operator');
  const readLease = () => coordination.readNamespacedLease({ name: LEASE, namespace: ns.name });
  const t0 = Date.now();
  const since = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  // A short grace period, kept by the annotation over the webhook's floor: the leader stops renewing
  // at the deadline's SIGTERM, and a slow JVM stop under load used up the 10 s floor, so that the pod
  // went Failed only after the Lease had run out and R2 had nothing left to win.
  const leader = operatorPod('leader', DEADLINE_SECONDS, operator, { ...leaderSpec, terminationGracePeriodSeconds: LEADER_GRACE_SECONDS });
  leader.metadata = { ...leader.metadata, annotations: { ...leader.metadata?.annotations, [annotations.gracePeriod]: String(LEADER_GRACE_SECONDS) } };
  await core.createNamespacedPod({ namespace: ns.name, body: leader });
  const held = await waitFor(
    'pod leader to hold the Lease',
    async () => {
      const lease = await readLease().catch(() => undefined);
      return names(lease?.spec?.holderIdentity, 'leader') ? lease : undefined;
    },
    90_000,
  );
  t.diagnostic(`${since()} leader holds ${LEASE} as ${held.spec?.holderIdentity}`);
  await core.createNamespacedPod({ namespace: ns.name, body: operatorPod('standby', undefined, operator) });
  // the standby's process up and asking for the Lease, so that how soon it leads is the hook's doing, not its start's
  await waitFor(
    'the standby to try for the Lease',
    async () => (await core.readNamespacedPodLog({ name: 'standby', namespace: ns.name, container: OPERATOR_CONTAINER })).includes('"msg":"trying"'),
    90_000,
  );

  // the leader's last renewal, as seen until the kubelet fails it (the hook may release right after)
  let lastRenewal = held;
  const failed = await waitFor(
    'the kubelet to fail the leader (DeadlineExceeded)',
    async () => {
      const lease = await readLease();
      if (lease.spec?.holderIdentity === held.spec?.holderIdentity) lastRenewal = lease;
      const pod = await core.readNamespacedPod({ name: 'leader', namespace: ns.name });
      return pod.status?.phase === 'Failed' ? pod : undefined;
    },
    (DEADLINE_SECONDS + 60) * 1000,
  );
  assert.equal(failed.status?.reason, 'DeadlineExceeded');
  t.diagnostic(`${since()} leader Failed; its last renewal seen ${new Date(msOf(lastRenewal.spec?.renewTime)).toISOString()}`);

  const taken = await waitFor(
    'the standby to hold the Lease',
    async () => {
      const lease = await readLease();
      return names(lease.spec?.holderIdentity, 'standby') ? lease : undefined;
    },
    60_000,
  );
  const renewed = msOf(lastRenewal.spec?.renewTime);
  const expiry = renewed + (lastRenewal.spec?.leaseDurationSeconds ?? 15) * 1000;
  const acquired = msOf(taken.spec?.acquireTime);
  t.diagnostic(
    `${since()} standby acquired ${((acquired - renewed) / 1000).toFixed(1)}s after the leader's last renewal (the lease would have run out at +${((expiry - renewed) / 1000).toFixed(0)}s)`,
  );
  const old = await core.readNamespacedPod({ name: 'leader', namespace: ns.name });
  assert.equal(old.metadata?.uid, failed.metadata?.uid, 'the old leader pod still exists');
  const events = await core.listNamespacedEvent({ namespace: ns.name });
  if (!withLeaderhook) {
    // Both times are the node's clock (the old leader's renewTime, the standby's acquireTime).
    assert.ok(Number.isFinite(renewed) && acquired >= expiry, 'the standby took the Lease only once it had expired');
    assert.deepEqual(
      events.items.filter((e: CoreV1Event) => e.reason === 'LeaderLockReleased').map((e) => e.message),
      [],
      'no release recorded',
    );
    return;
  }
  assert.ok(Number.isFinite(renewed) && acquired < expiry, 'the standby took the Lease before it would have expired: the hook released it, not the clock');
  const released = events.items.filter((e: CoreV1Event) => e.reason === 'LeaderLockReleased' && (e.message ?? '').includes(`Lease ${LEASE} (R2:`));
  assert.ok(
    released.some((e) => e.involvedObject.name === 'leader'),
    `an R2 LeaderLockReleased Event on the leader: ${JSON.stringify(events.items.map((e) => [e.reason, e.message]))}`,
  );
  t.diagnostic(`event: ${released[0]?.message}`);
}

describe('a Lease leader that ends Failed without being deleted (kubelet: activeDeadlineSeconds)', () => {
  let uninstall: (() => Promise<void>) | undefined;

  before(async () => {
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  for (const op of leaseOperators) {
    // controller-runtime's case keeps the name docs/compatibility/ records it by
    const which = op.operator === 'lease-operator' ? '' : ` (${op.operator})`;
    test(`R2 writes the leaderless record over the Failed holder's Lease; the standby leads before it would have expired${which}`, (t) =>
      leaseHolderFailed(t, op, true));
    test(`without leaderhook (control): the standby leads only once the Failed holder's Lease has expired (${op.operator})`, (t) =>
      leaseHolderFailed(t, op, false));
  }
});
