/**
 * `npm run bench:failover`: every scenario N times with leaderhook and
 * without, on the local cluster, each trial's timeline recorded.
 *
 *   npm run bench:failover -- [--trials 1] [--trials-of lfl-stuck-terminating=10 ...] [--scenario lfl-rollout --scenario ...]
 *     [--timeout 45] [--out docs/failover-trials.jsonl] [--docs docs]
 *
 * Each scenario and mode gets a namespace of its own, with a two-replica
 * Deployment of its operator (test/operators), in which its trials run one
 * after another: wait until a leader has written heartbeats and a standby is
 * trying, delete the leader (held Terminating by a finalizer in the
 * stuck-terminating scenario, released once the trial is over) or, in the
 * -failed scenarios, have its kubelet fail it without a delete
 * (activeDeadlineSeconds; the Failed pod is deleted once the trial is over),
 * follow the failover to the new leader and the old pod's removal, then the
 * next trial.
 * Scenarios run one after another, each with and without leaderhook side by
 * side (two failovers at once at most: on 2 cores more would time the load);
 * the stuck baseline takes the timeout, then GC and the standby's backoff,
 * per trial. A failover without a new leader within the timeout is recorded
 * as "never within" it.
 *
 * Every trial line is appended to --out as it ends (test/bench/failover-trials.ts
 * says what it holds); at the end docs/failover.md and docs/failover.svg
 * are rendered from that file (test/bench/failover-report.ts). Split brain is
 * counted from the heartbeats against the lock's holder at each revision.
 * Runs inside the cluster's network namespace (the npm script enters it; the
 * Kubernetes client refuses to run outside).
 */
import { appendFileSync } from 'node:fs';
import type { Recording } from '../support/recorder.ts';
import { createOperatorsNamespace, followFailover, lockOf, type OperatorName, type OperatorsNamespace, waitForLeader } from '../support/failover-trial.ts';
import { connectTestCluster, core, refuseLeftovers } from '../support/kube.ts';
import { deleteNamespaceAndWait, failByDeadline, holdTerminating, installLeaderhook, releaseTerminating } from '../support/leaderhook.ts';
import { newestRv, podGone, splitBrainViolations, waitForRecorded } from '../support/recording.ts';
import type { LockUnderTest } from '../support/split-brain.ts';
import { optionsOrExit } from './bench-args.ts';
import { renderDocs } from './failover-report.ts';
import type { TrialRecord } from './failover-trials.ts';
import { finishRunRecord, parseTrialArgs, recordedTrials, runRecord, say, startRecord, trialOptionsUsage } from './trial-args.ts';

interface Scenario {
  name: string;
  operator: OperatorName;
  /**
   * How the leader stops: its pod deleted; deleted and held Terminating after
   * its containers stopped until the trial is over; or failed by its kubelet
   * (activeDeadlineSeconds) and never deleted, as an evicted pod or one of a
   * node shut down stays Failed.
   */
  fault: 'delete' | 'stuck-terminating' | 'deadline';
}

const SCENARIO_LIST: Scenario[] = [
  { name: 'lfl-rollout', operator: 'lfl-operator', fault: 'delete' },
  { name: 'lease-rollout', operator: 'lease-operator', fault: 'delete' },
  { name: 'lfl-stuck-terminating', operator: 'lfl-operator', fault: 'stuck-terminating' },
  { name: 'client-go-rollout', operator: 'client-go-operator', fault: 'delete' },
  { name: 'josdk-rollout', operator: 'josdk-operator', fault: 'delete' },
  { name: 'client-go-failed', operator: 'client-go-operator', fault: 'deadline' },
  { name: 'josdk-failed', operator: 'josdk-operator', fault: 'deadline' },
  { name: 'client-go-stuck-terminating', operator: 'client-go-operator', fault: 'stuck-terminating' },
  { name: 'josdk-stuck-terminating', operator: 'josdk-operator', fault: 'stuck-terminating' },
];

const usage = `usage: npm run bench:failover -- [--trials 1] [--scenario NAME ...] [--timeout 45] [--out FILE [--append]] [--docs DIR]

${trialOptionsUsage(
  SCENARIO_LIST.map((s) => s.name),
  45,
)}
  (--trials-of: the slow stuck baseline takes the timeout per trial; --docs: failover.md and failover.svg)
`;

const args = optionsOrExit('bench:failover', usage, () =>
  parseTrialArgs(process.argv.slice(2), {
    scenarios: SCENARIO_LIST.map((s) => s.name),
    usage,
    defaultTimeoutSeconds: 45,
    outPrefix: 'leaderhook-failover',
  }),
);
// options first: --help and a bad option answer on any machine
connectTestCluster();
await refuseLeftovers('bench:failover');
const { timeoutMs, out } = args;
const scenarios = args.scenarios.map((name) => SCENARIO_LIST.find((s) => s.name === name)!);
/** With --append, this run's trials are numbered after those the record holds. */
const earlierTrials = recordedTrials(out);

/**
 * Split-brain episodes (test/support/split-brain.ts: a heartbeat by a process
 * not holding the lock at that revision, two processes writing in turns...)
 * that began at or after revision `fromRv`: this trial's.
 */
function splitBrainSince(recording: Recording, operator: OperatorName, fromRv: bigint): number {
  return splitBrainViolations(recording, lockOf(operator) as LockUnderTest).filter((v) => v.firstRv >= fromRv).length;
}

/** Stops the leader as the scenario says; resolves with the trial's time zero (the delete issued, or the deadline set). */
async function stopLeader(scenario: Scenario, namespace: string, leader: string): Promise<number> {
  if (scenario.fault === 'deadline') return failByDeadline(namespace, leader);
  const deleteIssued = Date.now();
  await core.deleteNamespacedPod({ name: leader, namespace });
  return deleteIssued;
}

async function deletePodAndWait(ns: OperatorsNamespace, pod: string): Promise<void> {
  await core.deleteNamespacedPod({ name: pod, namespace: ns.name });
  await waitForRecorded(ns.recording, `pod ${pod} to be gone`, async () => podGone(ns.recording, pod), 60_000);
}

async function runLoop(scenario: Scenario, ns: OperatorsNamespace): Promise<void> {
  const mode = ns.withLeaderhook ? 'with leaderhook' : 'without';
  let steadySince = 0;
  const count = args.trialsOf(scenario.name);
  for (let trial = 1; trial <= count; trial++) {
    const leader = await waitForLeader(ns.recording, scenario.operator, ns.name, steadySince, 180_000);
    if (scenario.fault === 'stuck-terminating') holdTerminating(ns.name, leader);
    const fromRv = newestRv(ns.recording);
    const faultAt = await stopLeader(scenario, ns.name, leader);
    const outcome = await followFailover(ns.recording, scenario.operator, leader, faultAt, { timeoutMs, untilOldPodGone: scenario.fault === 'delete' });
    if (scenario.fault === 'stuck-terminating') releaseTerminating(ns.name, leader);
    // the Failed pod stays until deleted; gone before the next trial, it cannot pass for a standby
    if (scenario.fault === 'deadline') await deletePodAndWait(ns, leader);
    const { marks: _marks, ...timeline } = outcome;
    const record: TrialRecord = {
      kind: 'trial',
      scenario: scenario.name,
      withLeaderhook: ns.withLeaderhook,
      trial: earlierTrials(scenario.name, ns.withLeaderhook) + trial,
      ...timeline,
      splitBrain: splitBrainSince(ns.recording, scenario.operator, fromRv),
    };
    appendFileSync(out, `${JSON.stringify(record)}\n`);
    const newLeader = outcome.newLeaderMs === undefined ? `never within ${timeoutMs / 1000} s` : `${(outcome.newLeaderMs / 1000).toFixed(2)} s`;
    const freed = outcome.lockFreedMs === undefined ? 'never' : `${(outcome.lockFreedMs / 1000).toFixed(2)} s (${outcome.freedBy})`;
    say(
      `${scenario.name} ${mode} trial ${trial}/${count}: lock gone ${freed}, new leader ${newLeader}${record.splitBrain ? `, SPLIT BRAIN ${record.splitBrain}` : ''}`,
    );
    steadySince = Date.now();
  }
}

async function main(): Promise<void> {
  const run = runRecord('bench:failover', process.argv.slice(2), timeoutMs);
  startRecord(args, run);
  say('installing leaderhook (deploy/)');
  const uninstall = await installLeaderhook({ debugLog: false });
  const namespaces: OperatorsNamespace[] = [];
  try {
    // One scenario at a time, with and without leaderhook side by side: two failovers at once on
    // 2 cores; more at once would time the machine's load, not the failover.
    for (const scenario of scenarios) {
      const pair: OperatorsNamespace[] = [];
      for (const withLeaderhook of [true, false]) {
        const ns = await createOperatorsNamespace(`bench-${scenario.name}-${withLeaderhook ? 'with' : 'without'}`, {
          withLeaderhook,
          operators: [scenario.operator],
          labels: { 'leaderhook.io/bench': 'failover' },
        });
        namespaces.push(ns);
        pair.push(ns);
      }
      await Promise.all(pair.map((ns) => runLoop(scenario, ns)));
      for (const ns of pair) await ns.recording.stop();
      for (const ns of pair) await deleteNamespaceAndWait(ns.name);
    }
  } finally {
    // Stopping twice and deleting a gone namespace are no-ops: this covers a run cut short.
    for (const ns of namespaces) await ns.recording.stop();
    for (const ns of namespaces) await deleteNamespaceAndWait(ns.name);
    await uninstall();
  }
  finishRunRecord(out, run);
  await renderDocs(out, args.docs);
}

await main();
