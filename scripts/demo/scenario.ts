/**
 * The demo's failover, on the real cluster: two namespaces, one opted in to
 * leaderhook and one not, each running two replicas of test/operators'
 * leader-for-life operator (operator-lib) and of its Lease operator
 * (controller-runtime); every leader deleted at the same moment; for each,
 * when its lock was freed and by what, when the old pod was gone and when the
 * new leader led, read off watches and logs (test/support/failover.ts).
 *
 * npm run demo runs it through scripts/demo/run-scenario.ts, and
 * test/e2e/demo.test.ts asserts what it finds. Talks to the cluster through
 * test/support/kube.ts, which refuses to run outside its network namespace.
 */
import type { V1ConfigMap, V1Lease } from '@kubernetes/client-node';
import {
  applyOperatorRbac,
  createOperator,
  heartbeats,
  hookSigtermLine,
  type LeaderLock,
  lastRenewal,
  leaseLock,
  lflLock,
  logOf,
  loggedBy,
  type Mark,
  mark,
  OPERATOR_CONTAINER,
  RELEASE_HOOK_CONTAINER,
  type Recording,
  record,
  releaseEvents,
  waitForNewLeaderRunning,
  waitForPodGone,
  waitForRecorded,
  waitForTakeover,
} from '../../test/support/failover.ts';
import { core, waitFor } from '../../test/support/kube.ts';
import { deleteNamespaceAndWait, grantReleaseHook, INJECTION_LABEL } from '../../test/support/leaderhook.ts';

export type OperatorName = 'lfl-operator' | 'lease-operator';
export const OPERATORS: readonly OperatorName[] = ['lfl-operator', 'lease-operator'];

export interface DemoNamespace {
  name: string;
  withLeaderhook: boolean;
  recording: Recording;
}

/** What happened to one operator's leadership after its leader pod was deleted; times in ms after the delete. */
export interface Outcome {
  namespace: string;
  withLeaderhook: boolean;
  operator: OperatorName;
  oldLeader: string;
  newLeader: string;
  deleteIssued: number;
  lockFreedMs: number;
  /** What freed the lock: the hook's rule, the garbage collector, or the Lease running out. */
  freedBy: string;
  oldPodGoneMs: number;
  newLeaderMs: number;
  /** The compact timeline: absolute times (ms since the epoch). */
  marks: Mark[];
}

const lockOf = (operator: OperatorName): LeaderLock<V1ConfigMap> | LeaderLock<V1Lease> => (operator === 'lfl-operator' ? lflLock : leaseLock);

/**
 * Creates (or re-creates) `name` with both operators; opted in to leaderhook
 * with the hook's Role bound first when `withLeaderhook`. Recording starts
 * before the first pod exists.
 */
export async function createDemoNamespace(name: string, withLeaderhook: boolean): Promise<DemoNamespace> {
  await deleteNamespaceAndWait(name);
  await core.createNamespace({
    body: {
      metadata: {
        name,
        labels: { 'leaderhook.io/demo': 'true', 'pod-security.kubernetes.io/enforce': 'restricted', ...(withLeaderhook ? INJECTION_LABEL : {}) },
      },
    },
  });
  await waitFor(`ServiceAccount default in ${name}`, () => core.readNamespacedServiceAccount({ name: 'default', namespace: name }), 30_000);
  const recording = await record(name, withLeaderhook ? [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER] : [OPERATOR_CONTAINER]);
  await applyOperatorRbac(name);
  if (withLeaderhook) await grantReleaseHook(name, 'test-operator');
  for (const operator of OPERATORS) {
    // In the opted-in namespace the webhook adds POD_NAME; the other keeps the manifests' own.
    await createOperator(name, operator, { shape: 'deployment', withoutPodNameEnv: withLeaderhook });
  }
  return { name, withLeaderhook, recording };
}

/** The pod that leads `operator`: it holds the lock, wrote 10 heartbeats, and another replica is up and trying. */
export async function waitForLeader(ns: DemoNamespace, operator: OperatorName): Promise<string> {
  const lock = lockOf(operator) as LeaderLock<unknown>;
  return waitForRecorded(
    ns.recording,
    `${operator} in ${ns.name} to elect a leader with a standby`,
    async () => {
      const holder = lock.holderOf(lock.events(ns.recording).at(-1)?.object);
      if (!holder) return undefined;
      const beats = heartbeats(ns.recording, lock.heartbeat).filter((beat) => beat.holder === holder).length;
      const standby = loggedBy(ns.recording, 'trying').some((line) => line.pod.startsWith(`${operator}-`) && line.pod !== holder);
      return beats >= 10 && standby && holder;
    },
    120_000,
  );
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
  return Promise.all(issued.map((target) => followFailover(target)));
}

async function followFailover({
  ns,
  operator,
  leader,
  deleteIssued,
}: {
  ns: DemoNamespace;
  operator: OperatorName;
  leader: string;
  deleteIssued: number;
}): Promise<Outcome> {
  const lock = lockOf(operator) as LeaderLock<unknown>;
  const { recording } = ns;
  const taken = await waitForTakeover(recording, lock, leader, deleteIssued);
  const newLeader = lock.holderOf(taken.object) ?? '';
  await waitForNewLeaderRunning(recording, lock, newLeader);
  const gone = await waitForPodGone(recording, leader);
  const r1 = releaseEvents(recording, leader, 'R1')[0];
  const freed = lockFreed(recording, operator, leader, deleteIssued, taken.at);
  const freedBy = r1
    ? 'release hook, rule R1 (SIGTERM after the operator stopped)'
    : operator === 'lfl-operator'
      ? 'garbage collector (after the pod object was gone)'
      : `Lease ran out (last renewal + ${lastRenewal(recording, leader).durationSeconds ?? '?'} s)`;
  const became = logOf(recording, newLeader, 'became leader')?.at ?? taken.at;
  return {
    namespace: ns.name,
    withLeaderhook: ns.withLeaderhook,
    operator,
    oldLeader: leader,
    newLeader,
    deleteIssued,
    lockFreedMs: freed - deleteIssued,
    freedBy,
    oldPodGoneMs: gone.at - deleteIssued,
    newLeaderMs: became - deleteIssued,
    marks: [
      ...mark('delete issued', deleteIssued),
      ...mark('old operator logged "stopped"', logOf(recording, leader, 'stopped')?.at),
      ...mark('release hook logged its SIGTERM decision', hookSigtermLine(recording, leader)?.at),
      ...mark('lock freed', freed),
      ...mark('old pod object gone', gone.at),
      ...mark(`new leader ${newLeader} logged "became leader"`, became),
    ],
  };
}

/**
 * When the lock stopped naming the old leader: the ConfigMap's deletion; a
 * Lease written leaderless (the hook's release) — or, where nobody released
 * it, the moment it ran out, which no write records.
 */
function lockFreed(recording: Recording, operator: OperatorName, leader: string, since: number, takenAt: number): number {
  if (operator === 'lfl-operator') {
    return lflLock.events(recording).find((event) => event.at > since && event.type === 'DELETED')?.at ?? takenAt;
  }
  const leaderless = leaseLock
    .events(recording)
    .find((event) => event.at > since && event.type !== 'DELETED' && leaseLock.holderOf(event.object) === undefined);
  if (leaderless) return leaderless.at;
  return Math.min(lastRenewal(recording, leader).expiresAt ?? takenAt, takenAt);
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
      namespaces.flatMap((ns) => OPERATORS.map(async (operator) => ({ ns, operator, leader: await waitForLeader(ns, operator) }))),
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
