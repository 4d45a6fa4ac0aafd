/**
 * `npm run bench:soak`: hours of random faults on operators with leaderhook
 * and without, side by side, on the local cluster; nothing may be lost.
 *
 *   npm run bench:soak -- [--duration 2h] [--seed N] [--mean-interval 30s] [--operators lfl-operator,...] [--out FILE] [--docs DIR]
 *
 * Each operator of test/operators runs in two namespaces, one opted in to
 * leaderhook and one not: as a Deployment of 2, and kopf-operator as two bare
 * pods the soak replaces itself, below every replica before them
 * (soak-operators.ts, soak-kopf.ts), its peering recorded and followed as its
 * lock. A seeded schedule (soak-plan.ts) hits them with bench:faults' faults
 * at random (soak-faults.ts), and on a cluster of two nodes or more drains a
 * node as an upgrade does (npm run cluster:up -- --nodes 3 first); meanwhile
 * the soak looks every second at who leads each namespace (soak-leaders.ts)
 * and keeps kopf-operator's two pods, samples every minute each container's
 * working set, CPU time and restarts, each hook's watches, and each hook's
 * and webhook replica's heap (soak-samples.ts), and every five minutes runs
 * the split-brain checker over each namespace's recording. The
 * record (soak-analysis.ts: run, fault, check, sample and watch lines) goes
 * to --out as it happens; docs/soak.md is rendered from it at the end (--docs).
 * The last part of the run has no faults, so the last check sees every
 * operator settled. A seed draws its faults over the namespaces of the
 * operators run: to run the faults of a record made before kopf-operator
 * joined again, name the four it ran (--operators
 * lfl-operator,lease-operator,client-go-operator,josdk-operator). Runs
 * inside the cluster's network namespace (the npm script enters it); stops
 * by itself, and on SIGINT or SIGTERM cleans up.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createOperatorsNamespace, type OperatorsNamespace, waitForLeader } from '../support/failover-trial.ts';
import { clusterProcessFaultsUnavailable, WEBHOOK_NAMESPACE } from '../support/faults.ts';
import { connectTestCluster, core, refuseLeftovers } from '../support/kube.ts';
import { deleteNamespaceAndWait, installLeaderhook } from '../support/leaderhook.ts';
import { fewerNodesThan } from '../support/nodes.ts';
import { say } from '../support/progress.ts';
import { newestRv } from '../support/recording.ts';
import { checkSplitBrain, tallySplitBrain } from '../support/split-brain.ts';
import {
  type LeaderObservation,
  leaderGaps,
  parseSoakRecords,
  type SoakCheckRecord,
  type SoakGapRecord,
  type SoakRecord,
  type SoakRunRecord,
} from './soak-analysis.ts';
import { optionsOrExit } from './bench-args.ts';
import { applyFault } from './soak-faults.ts';
import { LeaderTracker, type SoakLock, soakLockOf } from './soak-leaders.ts';
import { applyKopfCrds, createKopfNamespace, deleteKopfNamespace, type KopfReplicas, waitForKopfLeader } from './soak-kopf.ts';
import { excludedFaults, heartbeatIntervalArg, isSoakOperator, runsAsBarePods, SOAK_OPERATORS, type SoakOperator } from './soak-operators.ts';
import { CLUSTER_TARGET, parseDurationMs, planSoak, SOAK_FAULTS, type SoakFault } from './soak-plan.ts';
import { writeSoakReport } from './soak-report.ts';
import { HOOK_METRICS_PORT, hookMetrics, sampleContainers, webhookHeaps } from './soak-samples.ts';
import { finishRunRecord } from './trial-args.ts';

/**
 * How often each fault is drawn, relative to the others: the failovers users
 * meet most (a pod deleted, a rollout, an eviction, a crash) most often; the
 * cluster-wide ones rarely, as they are rare and hit every namespace at once.
 */
const FAULT_WEIGHTS: readonly { fault: SoakFault; weight: number }[] = [
  { fault: 'delete-leader', weight: 3 },
  { fault: 'rollout-restart', weight: 2 },
  { fault: 'crash-operator', weight: 2 },
  { fault: 'evict', weight: 2 },
  { fault: 'kill-hook', weight: 1 },
  { fault: 'delete-webhook-replica', weight: 1 },
  { fault: 'restart-apiserver', weight: 0.5 },
  // drawn only on a cluster of two nodes or more (npm run cluster:up -- --nodes 3); weight 0 keeps a seed's schedule on one node
  { fault: 'drain-node', weight: 0.5 },
];

/** A namespace is hit at most once in this long: a rollout of the JVM operator takes about a minute. */
const TARGET_COOLDOWN_MS = 120_000;
/** The webhook's replacement replica ready and every watch reconnected before the next cluster-wide fault. */
const CLUSTER_COOLDOWN_MS = 180_000;
const SETTLE_MS = 180_000;
const LOOK_EVERY_MS = 1_000;
const SAMPLE_EVERY_MS = 60_000;
const CHECK_EVERY_MS = 300_000;

const usage = `usage: npm run bench:soak -- [--duration 2h] [--seed N] [--mean-interval 30s] [--operators LIST] [--out FILE] [--docs DIR]

  --duration D       how long faults are applied, then ${SETTLE_MS / 60_000} min without (default 2h; 90m, 1h30m, 5m)
  --seed N           the fault schedule's seed, a 32-bit integer (default: drawn; the record keeps it to run the same again,
                     with the same --operators: the faults are drawn over their namespaces)
  --mean-interval D  the mean time between two faults (default 30s)
  --operators LIST   comma-separated, of ${SOAK_OPERATORS.join(', ')} (default all;
                     kopf-operator is never drawn a rollout restart: its pods are bare)
  --out FILE         the record, one JSON line per fault, check, sample and watch (default: a new file in /tmp)
  --docs DIR         where soak.md is rendered at the end, made if missing (default: none)
`;

function parseSoakArgs(argv: readonly string[]) {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      duration: { type: 'string', default: '2h' },
      seed: { type: 'string' },
      'mean-interval': { type: 'string', default: '30s' },
      operators: { type: 'string', default: SOAK_OPERATORS.join(',') },
      out: { type: 'string' },
      docs: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const durationMs = parseDurationMs(values.duration);
  const meanIntervalMs = parseDurationMs(values['mean-interval']);
  const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new Error(`--seed must be a whole number from 0 to 2^32 - 1, got ${values.seed}`);
  const operators = values.operators.split(',').map((name) => name.trim());
  for (const name of operators) if (!isSoakOperator(name)) throw new Error(`--operators: "${name}" is not one of ${SOAK_OPERATORS.join(', ')}`);
  if (new Set(operators).size !== operators.length) throw new Error(`--operators names one twice: ${values.operators}`);
  const out = values.out ?? `/tmp/leaderhook-soak-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`;
  if (existsSync(out)) throw new Error(`--out ${out} exists: the record of another run is never written over`);
  return { durationMs, meanIntervalMs, seed, operators: operators as SoakOperator[], out, docs: values.docs };
}

const args = optionsOrExit('bench:soak', usage, () => parseSoakArgs(process.argv.slice(2)));
// made now, so a --docs that cannot be written fails before the hours of faults rather than after them
if (args.docs) {
  try {
    mkdirSync(args.docs, { recursive: true });
  } catch (error) {
    process.stderr.write(`bench:soak: --docs ${args.docs}: ${(error as Error).message}\n`);
    process.exit(2);
  }
}
// options first: --help and a bad option answer on any machine
connectTestCluster();
await refuseLeftovers('bench:soak');

interface SoakNamespace extends OperatorsNamespace {
  operator: SoakOperator;
  lock: SoakLock;
  /** kopf-operator's bare pods, which the soak keeps itself. */
  replicas?: KopfReplicas;
  tracker: LeaderTracker;
  /** The leader at the last look, which a fault hits. */
  leader: string | undefined;
  observations: LeaderObservation[];
  /** Holders newly counted as left held since the last check. */
  leftHeld: string[];
  /** The newest revision the last check covered: the next one's window starts after it. */
  checkedRv: bigint;
  lastCheckMs: number;
}

const write = (record: SoakRecord) => appendFileSync(args.out, `${JSON.stringify(record)}\n`);

/**
 * The split-brain checker over the window since the last check, the dead
 * holders counted in it, and its longest leaderless stretch; then each
 * stretch that ended in it (at the last check, `final`, one still open too).
 */
function check(ns: SoakNamespace, atMs: number, final = false): SoakRecord[] {
  const upTo = newestRv(ns.recording);
  const found = checkSplitBrain(ns.lock.history(ns.recording)).filter((v) => v.firstRv > ns.checkedRv);
  const gaps = leaderGaps(ns.observations, atMs).get(ns.name) ?? [];
  const leaderlessMs = Math.max(0, ...gaps.filter((gap) => gap.open || gap.toMs > ns.lastCheckMs).map((gap) => gap.ms));
  const record: SoakCheckRecord = {
    kind: 'check',
    atMs,
    namespace: ns.name,
    withLeaderhook: ns.withLeaderhook,
    ...tallySplitBrain(found),
    lockHeldByDeadPod: ns.leftHeld.length,
    leaderlessMs,
  };
  const ended = gaps.filter((gap) => (gap.open ? final : gap.toMs > ns.lastCheckMs));
  const gapRecords: SoakGapRecord[] = ended.map((gap) => ({ kind: 'gap', namespace: ns.name, withLeaderhook: ns.withLeaderhook, ...gap }));
  ns.checkedRv = upTo;
  ns.lastCheckMs = atMs;
  ns.leftHeld = [];
  return [record, ...gapRecords];
}

/** Runs `body` every `periodMs`, the first time after one period, until `end` or a signal. */
async function every(periodMs: number, end: number, stop: AbortSignal, body: () => Promise<void> | void): Promise<void> {
  let tick = Date.now();
  for (;;) {
    await sleep(Math.max(0, Math.min(tick + periodMs, end) - Date.now()), undefined, { signal: stop }).catch(() => undefined);
    if (stop.aborted || Date.now() >= end) return;
    tick = Date.now();
    try {
      await body();
    } catch (error) {
      // an API server being restarted fails a list; the next tick tries again
      say(`soak: ${(error as Error).message}`);
    }
  }
}

async function main(): Promise<void> {
  const apiServerFault = clusterProcessFaultsUnavailable();
  if (apiServerFault) say(`no API server restarts in this soak: ${apiServerFault}`);
  const drainFault = fewerNodesThan(2);
  if (drainFault) say(`no node drains in this soak: ${drainFault}`);
  // a target fault every operator run excludes (a rollout restart of kopf-operator alone) has nothing to land on
  const meaningless = FAULT_WEIGHTS.filter(
    ({ fault }) => SOAK_FAULTS[fault].scope === 'target' && args.operators.every((operator) => excludedFaults(operator).includes(fault)),
  ).map(({ fault }) => fault);
  if (meaningless.length > 0) say(`no ${meaningless.join(', ')} in this soak: none of its operators has one`);
  const unavailable = new Set<SoakFault>([
    ...(apiServerFault ? ['restart-apiserver' as const] : []),
    ...(drainFault ? ['drain-node' as const] : []),
    ...meaningless,
  ]);
  const weights = FAULT_WEIGHTS.map((w) => (unavailable.has(w.fault) ? { ...w, weight: 0 } : w));
  say('installing leaderhook (deploy/)');
  const uninstall = await installLeaderhook({ debugLog: false });
  const namespaces: SoakNamespace[] = [];
  const stopping = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stopping.abort(signal));
  try {
    if (args.operators.some(runsAsBarePods)) applyKopfCrds();
    for (const operator of args.operators) {
      for (const withLeaderhook of [true, false]) {
        const name = `soak-${operator.replace(/-operator$/, '')}-${withLeaderhook ? 'with' : 'without'}`;
        const labels = { 'leaderhook.io/bench': 'soak' };
        const extraArgs = [heartbeatIntervalArg(operator)];
        const annotations: Record<string, string> = withLeaderhook ? { 'leaderhook.io/hook-metrics-port': String(HOOK_METRICS_PORT) } : {};
        const ns =
          operator === 'kopf-operator'
            ? await createKopfNamespace(name, { withLeaderhook, labels, extraArgs, annotations })
            : await createOperatorsNamespace(name, { withLeaderhook, operators: [operator], labels, operatorOptions: { extraArgs, annotations } });
        const lock = soakLockOf(operator);
        namespaces.push({
          ...ns,
          operator,
          lock,
          tracker: new LeaderTracker(ns.recording, lock),
          leader: undefined,
          observations: [],
          leftHeld: [],
          checkedRv: 0n,
          lastCheckMs: 0,
        });
      }
    }
    for (const ns of namespaces) {
      const leader =
        ns.operator === 'kopf-operator'
          ? await waitForKopfLeader(ns.replicas!, ns.tracker, 300_000)
          : await waitForLeader(ns.recording, ns.operator, ns.name, 0, 300_000);
      say(`${ns.name}: ${leader} leads`);
    }
    // the first fault may come before the first look of the loop
    for (const ns of namespaces) ns.leader = ns.tracker.look().leader;

    const plan = planSoak({
      durationMs: args.durationMs + SETTLE_MS,
      meanIntervalMs: args.meanIntervalMs,
      faults: weights,
      targets: namespaces.map((ns) => ({ namespace: ns.name, withLeaderhook: ns.withLeaderhook, excludedFaults: excludedFaults(ns.operator) })),
      seed: args.seed,
      targetCooldownMs: TARGET_COOLDOWN_MS,
      clusterCooldownMs: CLUSTER_COOLDOWN_MS,
      settleMs: SETTLE_MS,
    });
    const run: SoakRunRecord = {
      kind: 'run',
      command: `npm run bench:soak -- ${process.argv.slice(2).join(' ')}`.trim(),
      startedAt: new Date().toISOString(),
      seed: args.seed,
      durationMs: args.durationMs,
      nodes: (await core.listNode()).items.length,
    };
    writeFileSync(args.out, `${JSON.stringify(run)}\n`);
    const start = Date.parse(run.startedAt);
    const end = start + args.durationMs + SETTLE_MS;
    const atMs = () => Date.now() - start;
    say(
      `soak of ${plan.length} faults over ${args.durationMs / 60_000} min, then ${SETTLE_MS / 60_000} min settling; seed ${args.seed}; recording to ${args.out}`,
    );

    const sampleAll = async () => {
      const at = atMs();
      for (const namespace of [WEBHOOK_NAMESPACE, ...namespaces.map((ns) => ns.name)])
        for (const sample of await sampleContainers(namespace, at)) write(sample);
      for (const ns of namespaces.filter((each) => each.withLeaderhook)) for (const reading of await hookMetrics(ns.name, at)) write(reading);
      for (const heap of await webhookHeaps(at)) write(heap);
    };
    // every container's restart count before the first fault: the baseline its restarts count from
    await sampleAll();
    const barePods = namespaces.some((ns) => runsAsBarePods(ns.operator));
    const faults = (async () => {
      for (const planned of plan) {
        const wait = start + planned.atMs - Date.now();
        if (wait > 0) await sleep(wait, undefined, { signal: stopping.signal }).catch(() => undefined);
        if (stopping.signal.aborted) return;
        const ns = namespaces.find((each) => each.name === planned.target);
        const target = ns && {
          namespace: ns.name,
          withLeaderhook: ns.withLeaderhook,
          deployment: runsAsBarePods(ns.operator) ? undefined : ns.operator,
          leader: ns.leader,
          podNow: (pod: string) => ns.recording.podNow.get(pod),
        };
        const at = atMs();
        const leaderNodes = namespaces.map((each) => (each.leader ? each.recording.podNow.get(each.leader)?.spec?.nodeName : undefined));
        const outcome = await applyFault(planned.fault, target, { leaderNodes, barePods }).catch((error: unknown) => ({
          target: target?.leader ?? '',
          outcome: 'failed' as const,
          detail: (error as Error).message,
        }));
        write({
          kind: 'fault',
          atMs: at,
          fault: planned.fault,
          namespace: planned.target === CLUSTER_TARGET ? '' : planned.target,
          withLeaderhook: ns?.withLeaderhook ?? false,
          ...outcome,
        });
        say(
          `${planned.fault} ${planned.target}${outcome.target ? ` ${outcome.target}` : ''}: ${outcome.outcome}${outcome.detail ? ` (${outcome.detail})` : ''}`,
        );
      }
    })();
    const looks = every(LOOK_EVERY_MS, end, stopping.signal, () => {
      const now = Date.now();
      for (const ns of namespaces) {
        const look = ns.tracker.look(now);
        ns.leader = look.leader;
        ns.observations.push({ atMs: now - start, namespace: ns.name, leader: look.leader });
        if (look.newlyLeftHeld) {
          ns.leftHeld.push(look.newlyLeftHeld);
          say(`${ns.name}: lock still held by ${look.newlyLeftHeld}, which can never run again`);
        }
      }
    });
    // a loop of its own: a create the API server is slow to answer (being restarted) must not hold up the looks
    const keeps = every(LOOK_EVERY_MS, end, stopping.signal, async () => {
      for (const ns of namespaces) {
        // one namespace's failed create leaves the others' pods kept
        const created = await ns.replicas?.keep().catch((error: unknown) => say(`${ns.name}: replacing a kopf-operator pod: ${(error as Error).message}`));
        if (created) say(`${ns.name}: created ${created}`);
      }
    });
    const samples = every(SAMPLE_EVERY_MS, end, stopping.signal, sampleAll);
    const checks = every(CHECK_EVERY_MS, end, stopping.signal, () => {
      const at = atMs();
      for (const ns of namespaces) for (const record of check(ns, at)) write(record);
    });
    await Promise.all([faults, looks, keeps, samples, checks]);
    // the last word: every namespace checked once more at the end of the settling
    const at = atMs();
    for (const ns of namespaces) for (const record of check(ns, at, true)) write(record);
    finishRunRecord(args.out, run);
  } finally {
    for (const ns of namespaces) await ns.recording.stop();
    for (const ns of namespaces) await (ns.replicas ? deleteKopfNamespace(ns.name) : deleteNamespaceAndWait(ns.name));
    await uninstall();
  }
  const records = parseSoakRecords(readFileSync(args.out, 'utf8'));
  if (args.docs) {
    await writeSoakReport(records, join(args.docs, 'soak.md'));
    say(`wrote ${join(args.docs, 'soak.md')}`);
  }
  say(`done: ${args.out}`);
}

await main();
