/**
 * Operators whose leaders all run on one chosen node of a multi-node local
 * cluster and whose standbys run on the others: what the node-level faults
 * of test/multinode (drain, partition) start from.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { V1Affinity, V1Pod } from '@kubernetes/client-node';
import { type LeaderLock, leaderLockOf, type Scenario, setUpOperator } from './operators.ts';
import { loggedBy, waitForRecorded } from './recording.ts';
import { waitForSteadyLeader } from './takeover.ts';
import { servingPod, WEBHOOK_NAMESPACE, webhookPods } from './faults.ts';
import { core } from './kube.ts';
import { waitFor } from './wait.ts';
import { grantReleaseHook, INJECTION_LABEL, kubectl } from './leaderhook.ts';
import { onlySchedulable } from './nodes.ts';
import type { OperatorName } from './failover-trial.ts';

export interface NodeLeaderCase {
  operator: OperatorName;
  withLeaderhook: boolean;
  scenario: Scenario;
  lock: LeaderLock<unknown>;
  leader: string;
  standby: string;
  /** "lfl-operator with leaderhook", for reports. */
  label: string;
}

/** Two replicas never on one node: the standby runs where a fault of the leader's node does not reach. */
function apartFrom(operator: string): V1Affinity {
  return {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { 'app.kubernetes.io/name': operator } } },
      ],
    },
  };
}

/**
 * A namespace per operator and mode (with leaderhook: opted in, the release
 * hook's Role granted, POD_NAME left to the webhook), each a Deployment of
 * two: the first replica starts while `node` is the only schedulable node and
 * leads; the second, scaled up afterwards, runs on another node and waits.
 */
export async function leadersOn(
  t: Pick<TestContext, 'after'>,
  node: string,
  prefix: string,
  operators: OperatorName[],
  modes: boolean[] = [true, false],
): Promise<NodeLeaderCase[]> {
  const started: Omit<NodeLeaderCase, 'leader' | 'standby'>[] = [];
  await onlySchedulable(node, async () => {
    for (const operator of operators) {
      for (const withLeaderhook of modes) {
        const scenario = await setUpOperator(t, {
          prefix: `${prefix}-${operator.replace(/-operator$/, '')}-${withLeaderhook ? 'with' : 'without'}`,
          operator,
          options: { shape: 'deployment', withoutPodNameEnv: withLeaderhook, replicas: 1, affinity: apartFrom(operator) },
          labels: withLeaderhook ? INJECTION_LABEL : {},
          prepare: withLeaderhook ? (namespace) => grantReleaseHook(namespace, 'test-operator') : undefined,
        });
        const label = `${operator} ${withLeaderhook ? 'with' : 'without'} leaderhook`;
        started.push({ operator, withLeaderhook, scenario, lock: leaderLockOf(operator) as LeaderLock<unknown>, label });
      }
    }
    for (const c of started) {
      await waitForRecorded(
        c.scenario.recording,
        `${c.label} in ${c.scenario.namespace} to lead`,
        async () => loggedBy(c.scenario.recording, 'became leader').length > 0,
        120_000,
      );
    }
  });
  for (const c of started) kubectl(['-n', c.scenario.namespace, 'scale', `deployment/${c.operator}`, '--replicas=2']);
  const cases: NodeLeaderCase[] = [];
  for (const c of started) {
    const { leader, standby } = await waitForSteadyLeader(c.scenario.recording, c.lock.heartbeat);
    const leaderNode = c.scenario.recording.podNow.get(leader)?.spec?.nodeName;
    const standbyNode = c.scenario.recording.podNow.get(standby)?.spec?.nodeName;
    assert.equal(leaderNode, node, `${c.scenario.namespace}: the leader ${leader} runs on ${node}`);
    assert.notEqual(standbyNode, node, `${c.scenario.namespace}: the standby ${standby} runs on another node`);
    cases.push({ ...c, leader, standby });
  }
  return cases;
}

/** Seconds from `from` to `to`, for reports: "+1.23 s". */
export function since(from: number, to: number | undefined): string {
  return to === undefined ? 'never' : `+${((to - from) / 1000).toFixed(2)} s`;
}

/** Waits until `count` webhook pods are Ready and returns them. */
export async function webhookReady(count: number): Promise<V1Pod[]> {
  return waitFor(
    `${count} ready webhook pods`,
    async () => {
      const pods = (await webhookPods()).filter(servingPod);
      return pods.length === count ? pods : undefined;
    },
    120_000,
    250,
  );
}

/** Moves webhook pods onto `node` until `count` of the two run there (the others are deleted while it is the only schedulable node). */
export async function webhookPodsOn(node: string, count: 1 | 2): Promise<void> {
  await onlySchedulable(node, async () => {
    const elsewhere = (await webhookReady(2)).filter((pod) => pod.spec?.nodeName !== node);
    for (const pod of elsewhere.slice(0, Math.max(0, elsewhere.length - (2 - count)))) {
      await core.deleteNamespacedPod({ namespace: WEBHOOK_NAMESPACE, name: pod.metadata!.name! });
    }
    await waitFor(
      `${count} ready webhook pods on ${node}`,
      async () => {
        const serving = (await webhookPods()).filter(servingPod);
        return serving.length === 2 && serving.filter((pod) => pod.spec?.nodeName === node).length === count;
      },
      120_000,
      250,
    );
  });
}
