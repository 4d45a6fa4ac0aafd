/**
 * The operators the soak runs (test/operators, every framework the tests
 * have), and what sets kopf-operator apart among them. Four run as a
 * Deployment of 2 and elect their leader by a lock. kopf has no lock: its
 * replicas keep entries in a KopfPeering and the one of the highest priority
 * runs, its priority 100 minus the ordinal ending its pod's name. A
 * StatefulSet would bring a deleted leader back under its name and priority,
 * and every failover would be followed by a second one, the returning
 * replica taking over from the standby while kopf pauses it; so kopf runs as
 * bare pods the soak replaces itself (soak-kopf.ts), each new one named with
 * the next ordinal, below every replica before it.
 *
 * What each fault does to kopf-operator:
 * - delete-leader, evict: the leader pod (the top entry's) deleted or evicted;
 *   kopf's clean exit removes its entry, the standby resumes, and the soak
 *   creates a replacement, which joins paused, below the new leader;
 * - crash-operator: the leader's kopf process SIGKILLed, its entry left; the
 *   kubelet restarts it in the same pod, under the same UID and priority,
 *   and it runs on: no failover, as for the others;
 * - kill-hook: the leader's release hook SIGKILLed, restarted by the kubelet;
 * - delete-webhook-replica, restart-apiserver: cluster-wide, as for every namespace;
 * - drain-node: the drain evicts bare pods too (kubectl drain --force), and
 *   the soak replaces them on the nodes left;
 * - rollout-restart: never drawn for it (KOPF_EXCLUDED_FAULTS).
 */
import type { OperatorName } from '../support/failover-trial.ts';
import type { SoakFault } from './soak-plan.ts';

export type SoakOperator = OperatorName | 'kopf-operator';

export const SOAK_OPERATORS: readonly SoakOperator[] = ['lfl-operator', 'lease-operator', 'client-go-operator', 'josdk-operator', 'kopf-operator'];

export const isSoakOperator = (name: string): name is SoakOperator => (SOAK_OPERATORS as readonly string[]).includes(name);

/** The operator runs as bare pods that no controller owns or rolls out. */
export const runsAsBarePods = (operator: SoakOperator): boolean => operator === 'kopf-operator';

/** Faults that mean nothing for kopf-operator, and why: the plan never draws them for its namespaces. */
export const KOPF_EXCLUDED_FAULTS: Readonly<Partial<Record<SoakFault, string>>> = {
  'rollout-restart': 'its pods are bare, replaced by the soak itself: there is no rollout to restart',
};

/** The target faults `operator` has no meaning for (soak-plan.ts's excludedFaults). */
export function excludedFaults(operator: SoakOperator): SoakFault[] {
  return runsAsBarePods(operator) ? (Object.keys(KOPF_EXCLUDED_FAULTS) as SoakFault[]) : [];
}

/**
 * The soak's operators write a heartbeat every 500 ms, not the 100 ms of the
 * trials: hours of them are held in memory.
 */
export const HEARTBEAT_INTERVAL_MS = 500;

/** The heartbeat interval as `operator` reads it: a Go or Java duration, kopf-operator's argparse float of seconds. */
export function heartbeatIntervalArg(operator: SoakOperator, ms = HEARTBEAT_INTERVAL_MS): string {
  return `--heartbeat-interval=${operator === 'kopf-operator' ? String(ms / 1000) : `${ms}ms`}`;
}
