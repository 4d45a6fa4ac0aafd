/**
 * `npm run bench:kopf`: the kopf operator's failovers (test/operators/kopf-operator,
 * identity POD_ID the pod's UID) N times with leaderhook and without, on the
 * local cluster, each trial's timeline recorded as bench:failover records its own.
 *
 *   npm run bench:kopf -- [--trials 1] [--scenario kopf-crash ...] [--timeout 90] [--out FILE [--append]] [--docs DIR]
 *
 * kopf removes its own peering entry on a clean exit, so the scenarios are the
 * stops without that cleanup (docs/design.md#kopf-peering-entries): the leader
 * deleted and exiting at once on SIGTERM (kopf-crash: R1), deleted while
 * ignoring SIGTERM until the kubelet's SIGKILL (kopf-killed: R2 only while the
 * deleted pod shows Failed), and failed by its kubelet for activeDeadlineSeconds,
 * never deleted (kopf-failed: R2). Each trial has a namespace of its own
 * (test/support/kopf-scenario.ts: the leader, then the standby, paused by
 * kopf), with and without leaderhook side by side; without it the standby
 * resumes when the entry expires, lastseen + 60 s. The record has
 * bench:failover's format, so docs/failover.md's renderer draws the report
 * (--docs; docs/frameworks/kopf in the committed run). Runs inside the
 * cluster's network namespace (the npm script enters it).
 */
import { appendFileSync } from 'node:fs';
import type { V1PodSpec } from '@kubernetes/client-node';
import { releasedByHook } from '../support/failover-trial.ts';
import { failLeaderByDeadline, type KopfFailover, LEADER, STANDBY, setUpKopf, standbyTakesOver, stopAndCheck } from '../support/kopf-scenario.ts';
import { connectTestCluster, core, refuseLeftovers } from '../support/kube.ts';
import { installLeaderhook, kubectl } from '../support/leaderhook.ts';
import { hookSignalTime, operatorExited, podGone } from '../support/recording.ts';
import { optionsOrExit } from './bench-args.ts';
import { renderDocs } from './failover-report.ts';
import type { TrialRecord } from './failover-trials.ts';
import { finishRunRecord, parseTrialArgs, recordedTrials, runRecord, say, startRecord, trialOptionsUsage } from './trial-args.ts';

interface KopfScenarioSpec {
  name: string;
  /** Arguments of the leader's operator (test/operators/kopf-operator/main.py). */
  args: string[];
  leaderSpec?: Partial<V1PodSpec>;
  /** How the leader is stopped: its pod deleted, or failed by its kubelet. */
  fault: 'delete' | 'deadline';
}

const SCENARIO_LIST: KopfScenarioSpec[] = [
  { name: 'kopf-crash', args: ['--exit-on-sigterm'], fault: 'delete' },
  { name: 'kopf-killed', args: ['--ignore-sigterm'], fault: 'delete' },
  { name: 'kopf-failed', args: ['--ignore-sigterm'], leaderSpec: { terminationGracePeriodSeconds: 2 }, fault: 'deadline' },
];

const usage = `usage: npm run bench:kopf -- [--trials 1] [--scenario NAME ...] [--timeout 90] [--out FILE [--append]] [--docs DIR]

${trialOptionsUsage(
  SCENARIO_LIST.map((s) => s.name),
  90,
)}
  (--docs: failover.md and failover.svg of this run, e.g. docs/frameworks/kopf)
`;

const args = optionsOrExit('bench:kopf', usage, () =>
  parseTrialArgs(process.argv.slice(2), {
    scenarios: SCENARIO_LIST.map((s) => s.name),
    usage,
    defaultTimeoutSeconds: 90,
    outPrefix: 'leaderhook-kopf',
  }),
);
connectTestCluster();
await refuseLeftovers('bench:kopf');
const { timeoutMs, out } = args;
const scenarios = args.scenarios.map((name) => SCENARIO_LIST.find((s) => s.name === name)!);
/** With --append, this run's trials are numbered after those the record holds. */
const earlierTrials = recordedTrials(out);

/** One failover in a namespace of its own, from the leader's stop to the standby's lead (or the timeout). */
async function runTrial(scenario: KopfScenarioSpec, withLeaderhook: boolean, trial: number): Promise<TrialRecord> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const setup = await setUpKopf((cleanup) => cleanups.push(cleanup), withLeaderhook, scenario.args, scenario.leaderSpec);
    let start: number;
    if (scenario.fault === 'deadline') start = await failLeaderByDeadline(setup);
    else {
      start = Date.now();
      await core.deleteNamespacedPod({ name: LEADER, namespace: setup.namespace });
    }
    // no new leader within the timeout is an outcome too: "never within"
    const failover: KopfFailover | undefined = await standbyTakesOver(setup, start, timeoutMs).catch(() => undefined);
    const { violations } = await stopAndCheck(setup);
    const { recording } = setup;
    const since = (at: number | undefined) => (at === undefined ? undefined : at - start);
    return {
      kind: 'trial',
      scenario: scenario.name,
      withLeaderhook,
      trial,
      operator: 'kopf-operator',
      oldLeader: LEADER,
      ...(failover ? { newLeader: STANDBY } : {}),
      deleteIssued: start,
      operatorExitedMs: since(operatorExited(recording, LEADER)?.at),
      hookSigtermMs: since(hookSignalTime(recording, LEADER)),
      lockFreedMs: since(failover?.removed.at),
      freedBy: failover ? (releasedByHook(recording, LEADER) ?? 'kopf: the standby removed the expired entry') : 'not freed',
      oldPodGoneMs: since(podGone(recording, LEADER)?.at),
      newLeaderMs: since(failover?.became),
      splitBrain: violations.length,
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => say(`cleanup: ${(error as Error).message}`));
  }
}

async function runLoop(scenario: KopfScenarioSpec, withLeaderhook: boolean): Promise<void> {
  const count = args.trialsOf(scenario.name);
  for (let trial = 1; trial <= count; trial++) {
    const record = await runTrial(scenario, withLeaderhook, earlierTrials(scenario.name, withLeaderhook) + trial);
    appendFileSync(out, `${JSON.stringify(record)}\n`);
    const newLeader = record.newLeaderMs === undefined ? `never within ${timeoutMs / 1000} s` : `${(record.newLeaderMs / 1000).toFixed(2)} s`;
    const freed = record.lockFreedMs === undefined ? 'never' : `${(record.lockFreedMs / 1000).toFixed(2)} s (${record.freedBy})`;
    say(
      `${scenario.name} ${withLeaderhook ? 'with leaderhook' : 'without'} trial ${trial}/${count}: entry gone ${freed}, new leader ${newLeader}${record.splitBrain ? `, SPLIT BRAIN ${record.splitBrain}` : ''}`,
    );
  }
}

async function main(): Promise<void> {
  const run = runRecord('bench:kopf', process.argv.slice(2), timeoutMs);
  startRecord(args, run);
  kubectl(['apply', '--server-side', '-f', 'test/operators/manifests/kopf-peering-crds.yaml']);
  kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/kopfpeerings.kopf.dev', 'crd/clusterkopfpeerings.kopf.dev']);
  say('installing leaderhook (deploy/)');
  const uninstall = await installLeaderhook({ debugLog: false });
  try {
    // with and without leaderhook side by side: two failovers at once, as bench:failover runs them
    for (const scenario of scenarios) await Promise.all([runLoop(scenario, true), runLoop(scenario, false)]);
  } finally {
    await uninstall();
  }
  finishRunRecord(out, run);
  await renderDocs(out, args.docs);
}

await main();
