/**
 * An operator on client-go's LeaderElector alone (test/operators/cmd/client-go-operator):
 * its Lease held as the pod's name, ReleaseOnCancel left false, a 15 s
 * lease. leaderhook's hook counts a Lease whose holderIdentity is exactly
 * POD_NAME as its pod's own (docs/design.md#leases-held-by-identity), so: without
 * leaderhook the leader pod deleted hands the lease on only once it has
 * expired; with leaderhook its hook releases the lease by R1 and another pod
 * leads well before; a crash of the leader's container releases nothing and
 * the restarted process renews its own lease at once
 * (test/support/pod-name-lease-failover.ts says each scenario's assertions).
 *
 * Needs the leaderhook and operator images (scripts/build-local-image.sh,
 * test/operators/build.sh). Run inside the cluster's network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/client-go-operator.test.ts
 */
import { connectTestCluster } from '../support/kube.ts';
import { clientGoLock } from '../support/operators.ts';
import { describePodNameLeaseFailover } from '../support/pod-name-lease-failover.ts';

connectTestCluster();

describePodNameLeaseFailover({
  operator: 'client-go-operator',
  title: 'client-go-operator (client-go LeaderElector, Lease held as the pod name)',
  lock: clientGoLock,
  // test/operators/cmd/client-go-operator
  leaseDurationMs: 15_000,
});
