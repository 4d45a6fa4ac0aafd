/**
 * The demo's failover, on the real cluster: two namespaces, one opted in to
 * leaderhook and one not, each running two replicas of test/operators'
 * leader-for-life operator (operator-lib) and of its Lease operator
 * (controller-runtime); every leader deleted at the same moment; for each,
 * when its lock was freed and by what, when the old pod was gone and when the
 * new leader led, read off watches and logs (test/support/recording.ts).
 *
 * npm run demo runs it through scripts/demo/run-scenario.ts, and
 * test/e2e/demo.test.ts asserts what it finds. Talks to the cluster through
 * test/support/kube.ts, which refuses to run outside its network namespace.
 */
import {
  createOperatorsNamespace,
  followFailover,
  type OperatorName,
  type OperatorsNamespace,
  type TrialOutcome,
  waitForLeader,
} from '../../test/support/failover-trial.ts';
import { core } from '../../test/support/kube.ts';
import { deleteNamespaceAndWait } from '../../test/support/leaderhook.ts';

export type { OperatorName };
export const OPERATORS: readonly OperatorName[] = ['lfl-operator', 'lease-operator'];
/** Longer than any failover of these operators takes, GC and Lease expiry included. */
const FAILOVER_TIMEOUT_MS = 120_000;

export type DemoNamespace = OperatorsNamespace;

/** One operator's failover in one of the two namespaces. */
export interface Outcome extends TrialOutcome {
  namespace: string;
  withLeaderhook: boolean;
}

export function createDemoNamespace(name: string, withLeaderhook: boolean): Promise<DemoNamespace> {
  return createOperatorsNamespace(name, { withLeaderhook, operators: OPERATORS, labels: { 'leaderhook.io/demo': 'true' } });
}

/** Deletes every leader at the same moment and follows each failover to its new leader and the old pod's removal. */
export async function deleteLeadersAtOnce(leaders: { ns: DemoNamespace; operator: OperatorName; leader: string }[]): Promise<Outcome[]> {
  const issued = await Promise.all(
    leaders.map(async (target) => {
      const deleteIssued = Date.now();
      await core.deleteNamespacedPod({ name: target.leader, namespace: target.ns.name });
      return { ...target, deleteIssued };
    }),
  );
  return Promise.all(
    issued.map(async ({ ns, operator, leader, deleteIssued }) => {
      const outcome = await followFailover(ns.recording, operator, leader, deleteIssued, { timeoutMs: FAILOVER_TIMEOUT_MS });
      if (!outcome.newLeader || outcome.oldPodGoneMs === undefined) {
        throw new Error(`${operator} in ${ns.name}: no new leader, or the old pod ${leader} still there, ${FAILOVER_TIMEOUT_MS / 1000} s after its delete`);
      }
      return { ...outcome, namespace: ns.name, withLeaderhook: ns.withLeaderhook };
    }),
  );
}

/** The whole demo scenario: namespaces, leaders, one simultaneous delete, outcomes. `progress` gets a line per step. */
export async function runDemoScenario(
  names: { with: string; without: string },
  progress: (line: string) => void,
): Promise<{ outcomes: Outcome[]; namespaces: DemoNamespace[] }> {
  progress(`creating namespaces ${names.with} (leaderhook.io/injection=enabled) and ${names.without} (not opted in), 2 replicas of each operator`);
  const namespaces = [await createDemoNamespace(names.with, true), await createDemoNamespace(names.without, false)];
  try {
    progress('waiting for the four leaders and their standbys');
    const leaders = await Promise.all(
      namespaces.flatMap((ns) => OPERATORS.map(async (operator) => ({ ns, operator, leader: await waitForLeader(ns.recording, operator, ns.name) }))),
    );
    for (const { ns, operator, leader } of leaders) progress(`  ${operator.padEnd(15)} ${ns.name.padEnd(24)} leader ${leader}`);
    progress('deleting all four leader pods at the same moment');
    const outcomes = await deleteLeadersAtOnce(leaders);
    // A second more of heartbeats, then the watches stop so the process can exit.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { outcomes, namespaces };
  } finally {
    for (const ns of namespaces) await ns.recording.stop();
  }
}

/** Leaves nothing of the demo behind (the e2e test; npm run demo keeps its namespaces to look at). */
export async function deleteDemoNamespaces(names: string[]): Promise<void> {
  for (const name of names) await deleteNamespaceAndWait(name);
}
