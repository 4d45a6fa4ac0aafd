/**
 * An operator on the Java Operator SDK (test/operators/josdk-operator) with
 * JOSDK's own leader election: fabric8's LeaderElector on a Lease held as
 * $HOSTNAME, the pod's name, releaseOnCancel false (JOSDK hard-codes it), a
 * 15 s lease. leaderhook's hook counts a Lease whose holderIdentity is
 * exactly POD_NAME as its pod's own (docs/design.md#leases-held-by-identity), and
 * fabric8 takes a Lease whose holderIdentity is empty at once (its
 * canBecomeLeader: an empty holder, or renewTime + leaseDuration passed), so:
 * without leaderhook the leader pod deleted hands the lease on only once it
 * has expired; with leaderhook its hook releases the lease by R1 and another
 * pod leads well before; a crash of the leader's container releases nothing
 * and the restarted JVM renews its own lease (fabric8 keeps acquireTime and
 * the transitions for a lease naming itself)
 * (test/support/pod-name-lease-failover.ts says each scenario's assertions).
 *
 * Needs the leaderhook and operator images (scripts/build-local-image.sh,
 * test/operators/build.sh). Run inside the cluster's network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/josdk-operator.test.ts
 */
import { connectTestCluster } from '../support/kube.ts';
import { josdkLock } from '../support/operators.ts';
import { describePodNameLeaseFailover } from '../support/pod-name-lease-failover.ts';

connectTestCluster();

describePodNameLeaseFailover({
  operator: 'josdk-operator',
  title: 'josdk-operator (Java Operator SDK leader election, Lease held as the pod name)',
  lock: josdkLock,
  // test/operators/josdk-operator Main.LEASE_DURATION
  leaseDurationMs: 15_000,
});
