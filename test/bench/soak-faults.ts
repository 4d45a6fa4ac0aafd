/**
 * The soak's faults, each done to the local cluster as it happens to a real
 * one (test/bench/soak-plan.ts decides which and when; soak-operators.ts
 * tells what each does to kopf-operator's bare pods): the leader pod
 * deleted or evicted through the Eviction API, a rollout restart, the
 * leader's operator or release hook container killed by its PID (SIGKILL, as
 * a crash or an OOM kill; the kubelet restarts it in the same pod), a webhook
 * replica deleted, the API server killed and started again, a node drained
 * (kubectl drain, as an upgrade does) and made schedulable again. A fault with
 * nothing to hit at its moment (no leader, the leader already going) is
 * skipped and recorded so, never moved to another target; one whose
 * applying throws (its process not found, a request refused) is recorded as
 * failed, with the error.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { killAndRestartApiServer, servingPod, WEBHOOK_NAMESPACE, webhookPods } from '../support/faults.ts';
import { core } from '../support/kube.ts';
import { kubectl } from '../support/leaderhook.ts';
import { drain, uncordon } from '../support/nodes.ts';
import { OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { sigkillContainer } from './container-cgroup.ts';
import type { SoakFaultRecord } from './soak-analysis.ts';
import { leadersOn, nodeToDrain, type SoakFault } from './soak-plan.ts';

/** What a fault needs to know of its namespace at its moment. */
export interface FaultTarget {
  namespace: string;
  withLeaderhook: boolean;
  /** The Deployment of the namespace's operator; undefined for bare pods (kopf-operator), which nothing rolls out. */
  deployment: string | undefined;
  /** The pod leading now (LeaderTracker), if any. */
  leader: string | undefined;
  /** The pod as the recording last saw it. */
  podNow: (name: string) => V1Pod | undefined;
}

/** What a cluster-wide fault needs to know of the cluster at its moment. */
export interface ClusterState {
  /** The node each namespace's leader runs on now (undefined: no leader, or not scheduled yet). */
  leaderNodes: readonly (string | undefined)[];
  /** Some namespace runs bare pods the soak replaces itself (kopf-operator): a drain evicts them too. */
  barePods?: boolean;
}

export type FaultOutcome = Pick<SoakFaultRecord, 'target' | 'outcome' | 'detail'>;

const skipped = (target: string, detail: string): FaultOutcome => ({ target, outcome: 'skipped', detail });

/** The leader pod, if there is one to hit: running and not already being deleted. */
function leaderToHit(on: FaultTarget): { pod: V1Pod; name: string } | FaultOutcome {
  if (!on.leader) return skipped('', 'no leader at that moment');
  const pod = on.podNow(on.leader);
  if (!pod || pod.metadata?.deletionTimestamp) return skipped(on.leader, 'the leader pod was already going');
  return { pod, name: on.leader };
}

/** SIGKILL to `container`'s process in the leader pod (container-cgroup.ts). */
function killContainer(on: FaultTarget, container: string): FaultOutcome {
  const hit = leaderToHit(on);
  if ('outcome' in hit) return hit;
  let killed: ReturnType<typeof sigkillContainer>;
  try {
    killed = sigkillContainer(hit.pod, container);
  } catch (error) {
    return { target: hit.name, outcome: 'failed', detail: `its ${container} container's PID: ${(error as Error).message}` };
  }
  if (!killed) return skipped(hit.name, `its ${container} container was not running`);
  return { target: hit.name, outcome: 'applied', detail: `${container} PID ${killed.pid}, restart count was ${killed.restartCount}` };
}

/**
 * kubectl drain of the node the most leaders run on, then uncordon: the node
 * an upgrade took comes back, so the soak keeps every node to move pods to.
 */
async function drainNode(cluster: ClusterState): Promise<FaultOutcome> {
  const nodes = (await core.listNode()).items.map((node) => ({ name: node.metadata!.name!, unschedulable: node.spec?.unschedulable === true }));
  const name = nodeToDrain(nodes, cluster.leaderNodes);
  if (name === undefined) {
    const schedulable = nodes.filter((node) => !node.unschedulable).length;
    return skipped('', `${schedulable} schedulable node${schedulable === 1 ? '' : 's'}: no other node to take a drained one's pods`);
  }
  const leaders = leadersOn(name, cluster.leaderNodes);
  try {
    const drained = await drain(name, undefined, { barePods: cluster.barePods });
    const took = `${((drained.endedAt - drained.startedAt) / 1000).toFixed(1)} s`;
    if (drained.code !== 0)
      return { target: name, outcome: 'failed', detail: `kubectl drain exited ${drained.code} after ${took}: ${drained.lines.at(-1)?.text ?? 'no output'}` };
    return { target: name, outcome: 'applied', detail: `${leaders} leader${leaders === 1 ? '' : 's'} on it, drained in ${took}` };
  } finally {
    uncordon(name);
  }
}

/** Applies one fault of a namespace (`on`) or of the whole cluster (`on` undefined). */
export async function applyFault(fault: SoakFault, on: FaultTarget | undefined, cluster: ClusterState = { leaderNodes: [] }): Promise<FaultOutcome> {
  switch (fault) {
    case 'drain-node':
      return drainNode(cluster);
    case 'restart-apiserver': {
      const killedAt = Date.now();
      await killAndRestartApiServer();
      return { target: 'kube-apiserver', outcome: 'applied', detail: `answering again after ${((Date.now() - killedAt) / 1000).toFixed(1)} s` };
    }
    case 'delete-webhook-replica': {
      const serving = (await webhookPods()).filter(servingPod).sort((a, b) => (a.metadata!.name! < b.metadata!.name! ? -1 : 1));
      const [pod] = serving;
      if (!pod) return skipped('', 'no webhook replica serving');
      await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: WEBHOOK_NAMESPACE });
      return { target: pod.metadata!.name!, outcome: 'applied', detail: `${serving.length} replicas were serving` };
    }
    case 'rollout-restart':
      // the plan draws none for bare pods (soak-operators.ts): this says so should one come
      if (on!.deployment === undefined) return skipped('', 'no Deployment: its pods are bare, replaced by the soak itself');
      kubectl(['-n', on!.namespace, 'rollout', 'restart', `deployment/${on!.deployment}`]);
      return { target: on!.deployment, outcome: 'applied' };
    case 'crash-operator':
      return killContainer(on!, OPERATOR_CONTAINER);
    case 'kill-hook':
      return killContainer(on!, RELEASE_HOOK_CONTAINER);
    case 'delete-leader':
    case 'evict': {
      const hit = leaderToHit(on!);
      if ('outcome' in hit) return hit;
      const { namespace } = on!;
      if (fault === 'delete-leader') await core.deleteNamespacedPod({ name: hit.name, namespace });
      else
        await core.createNamespacedPodEviction({
          name: hit.name,
          namespace,
          body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: hit.name, namespace } },
        });
      return { target: hit.name, outcome: 'applied' };
    }
  }
}
