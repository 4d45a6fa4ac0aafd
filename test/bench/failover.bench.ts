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
 * stuck-terminating scenario, released once the trial is over), follow the
 * failover to the new leader and the old pod's removal, then the next trial.
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
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { type Recording, splitBrainViolations } from '../support/failover.ts';
import { createOperatorsNamespace, followFailover, lockOf, type OperatorName, type OperatorsNamespace, waitForLeader } from '../support/failover-trial.ts';
import { core } from '../support/kube.ts';
import { deleteNamespaceAndWait, holdTerminating, installLeaderhook, kubectl, releaseTerminating } from '../support/leaderhook.ts';
import type { LockUnderTest } from '../support/split-brain.ts';
import { writeReport } from './failover-report.ts';
import { parseRecords, type RunRecord, type TrialRecord } from './failover-trials.ts';

interface Scenario {
  name: string;
  operator: OperatorName;
  /** The leader pod stays Terminating after its containers stopped until the trial is over. */
  stuckTerminating: boolean;
}

const SCENARIO_LIST: Scenario[] = [
  { name: 'lfl-rollout', operator: 'lfl-operator', stuckTerminating: false },
  { name: 'lease-rollout', operator: 'lease-operator', stuckTerminating: false },
  { name: 'lfl-stuck-terminating', operator: 'lfl-operator', stuckTerminating: true },
];

const usage = `usage: npm run bench:failover -- [--trials 1] [--scenario NAME ...] [--timeout 45] [--out FILE] [--docs DIR]

  --trials N     trials per scenario and mode (with and without leaderhook)
  --trials-of S=N  N trials for scenario S instead (repeatable; the slow stuck baseline takes the timeout per trial)
  --scenario S   one of ${SCENARIO_LIST.map((s) => s.name).join(', ')} (repeatable; default all)
  --timeout S    seconds a trial waits for a new leader before it counts as "never within S s"
  --out FILE     the trial record, one JSON line per trial (default: a new file in /tmp)
  --docs DIR     where failover.md and failover.svg are rendered at the end (default: none)
`;

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '1' },
    'trials-of': { type: 'string', multiple: true },
    scenario: { type: 'string', multiple: true },
    timeout: { type: 'string', default: '45' },
    out: { type: 'string' },
    docs: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const trials = Number(values.trials);
const timeoutMs = Number(values.timeout) * 1000;
if (!Number.isInteger(trials) || trials < 1) throw new Error(`--trials must be a positive whole number, got ${values.trials}`);
const trialsOf = new Map<string, number>();
for (const item of values['trials-of'] ?? []) {
  const [name, count] = item.split('=');
  if (!SCENARIO_LIST.some((s) => s.name === name) || !Number.isInteger(Number(count)) || Number(count) < 1) {
    throw new Error(`--trials-of ${item}: expected SCENARIO=N with a scenario of ${SCENARIO_LIST.map((s) => s.name).join(', ')} and N ≥ 1`);
  }
  trialsOf.set(name!, Number(count));
}
if (!(timeoutMs >= 5000)) throw new Error(`--timeout must be at least 5 seconds, got ${values.timeout}`);
const scenarios = (values.scenario ?? SCENARIO_LIST.map((s) => s.name)).map((name) => {
  const found = SCENARIO_LIST.find((s) => s.name === name);
  if (!found) throw new Error(`--scenario ${name}: not one of ${SCENARIO_LIST.map((s) => s.name).join(', ')}`);
  return found;
});
const out = values.out ?? `/tmp/leaderhook-failover-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`;
if (existsSync(out)) throw new Error(`--out ${out} exists: the record of another run is never appended to`);

const say = (line: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/**
 * Split-brain episodes (test/support/split-brain.ts: a heartbeat by a process
 * not holding the lock at that revision, two processes writing in turns...)
 * that began at or after revision `fromRv`: this trial's.
 */
function splitBrainSince(recording: Recording, operator: OperatorName, fromRv: bigint): number {
  return splitBrainViolations(recording, lockOf(operator) as LockUnderTest).filter((v) => v.firstRv >= fromRv).length;
}

/** The newest revision the recording has seen, of any object: where a trial's window starts. */
function newestRv(recording: Recording): bigint {
  let rv = 0n;
  for (const list of [recording.configMaps, recording.leases, recording.pods]) {
    for (const event of list) if (event.rv > rv) rv = event.rv;
  }
  return rv;
}

async function runLoop(scenario: Scenario, ns: OperatorsNamespace): Promise<void> {
  const mode = ns.withLeaderhook ? 'with leaderhook' : 'without';
  let steadySince = 0;
  const count = trialsOf.get(scenario.name) ?? trials;
  for (let trial = 1; trial <= count; trial++) {
    const leader = await waitForLeader(ns.recording, scenario.operator, ns.name, steadySince, 180_000);
    if (scenario.stuckTerminating) holdTerminating(ns.name, leader);
    const fromRv = newestRv(ns.recording);
    const deleteIssued = Date.now();
    await core.deleteNamespacedPod({ name: leader, namespace: ns.name });
    const outcome = await followFailover(ns.recording, scenario.operator, leader, deleteIssued, { timeoutMs, untilOldPodGone: !scenario.stuckTerminating });
    if (scenario.stuckTerminating) releaseTerminating(ns.name, leader);
    const { marks: _marks, ...timeline } = outcome;
    const record: TrialRecord = {
      kind: 'trial',
      scenario: scenario.name,
      withLeaderhook: ns.withLeaderhook,
      trial,
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
  const startedAt = new Date();
  const run: RunRecord = {
    kind: 'run',
    command: `npm run bench:failover -- ${process.argv.slice(2).join(' ')}`.trim(),
    startedAt: startedAt.toISOString(),
    machine: `${cpus().length} cores; the local cluster of test/cluster (Kubernetes ${
      kubectl(['version', '-o', 'json'])
        .match(/"gitVersion":\s*"(v[^"]+)"/g)
        ?.at(-1)
        ?.replace(/.*"(v[^"]+)"/, '$1') ?? '?'
    }, one node)`,
    timeoutMs,
  };
  writeFileSync(out, `${JSON.stringify(run)}\n`);
  say(`recording to ${out}`);
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
  const lines = readFileSync(out, 'utf8').split('\n');
  lines[0] = JSON.stringify({ ...run, finishedAt: new Date().toISOString() });
  writeFileSync(out, lines.join('\n'));
  say(`done in ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0)} s: ${out}`);
  if (values.docs) {
    const written = await writeReport(parseRecords(readFileSync(out, 'utf8')), values.docs);
    say(`rendered ${written.join(', ')}`);
  }
}

await main();
