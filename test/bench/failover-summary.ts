/**
 * What a failover benchmark run measured, from its record (failover-trials.ts):
 * the trials grouped per scenario and mode, nearest-rank percentiles of each
 * phase, what freed the lock, and the targets of the benchmark, each measured
 * and judged. docs/failover.md and docs/failover.svg (failover-report.ts) are
 * drawn from these numbers alone.
 */
import { type FailoverRecord, LEASE_OPERATORS, type PHASES, RELEASED_BY_R1, type RunRecord, SCENARIOS, type TrialRecord } from './failover-trials.ts';
import { percentile } from './stats.ts';

export interface Run {
  /** The first run: its timeout is every run's (--append holds to it). */
  run: RunRecord;
  /** Every run of the record in order (several where --append added to it), each with how many trials it added. */
  runs: { run: RunRecord; trials: number }[];
  /** In report order: scenario (SCENARIOS first), with leaderhook before without, trial number. */
  trials: TrialRecord[];
}

/** Scenarios in SCENARIOS' order, then any the record names that SCENARIOS does not, by name. */
export function scenariosOf(trials: readonly TrialRecord[]): string[] {
  const known = Object.keys(SCENARIOS);
  const named = new Set(trials.map((trial) => trial.scenario));
  return [...known.filter((scenario) => named.has(scenario)), ...[...named].filter((scenario) => !known.includes(scenario)).sort()];
}

/**
 * The record's runs and its trials in report order. A record starts with a
 * run line; later run lines are runs --append added, each followed by its
 * trials, all with the first run's timeout (percentiles count "never"
 * against it). Anything else cannot be rendered honestly.
 */
export function splitRun(records: readonly FailoverRecord[]): Run {
  if (records[0]?.kind !== 'run') throw new Error('a failover record starts with its "run" line; this one does not');
  const runs: Run['runs'] = [];
  for (const record of records) {
    if (record.kind === 'run') runs.push({ run: record, trials: 0 });
    else runs.at(-1)!.trials++;
  }
  const first = runs[0]!.run;
  const other = runs.find(({ run }) => run.timeoutMs !== first.timeoutMs);
  if (other)
    throw new Error(`the runs of a failover record share one timeout; "${other.run.command}" has ${other.run.timeoutMs} ms, the first ${first.timeoutMs} ms`);
  const trials = records.filter((record): record is TrialRecord => record.kind === 'trial');
  const order = scenariosOf(trials);
  const sorted = [...trials].sort(
    (a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario) || Number(b.withLeaderhook) - Number(a.withLeaderhook) || a.trial - b.trial,
  );
  return { run: first, runs, trials: sorted };
}

export function trialsOf(trials: readonly TrialRecord[], scenario: string, withLeaderhook: boolean): TrialRecord[] {
  return trials.filter((trial) => trial.scenario === scenario && trial.withLeaderhook === withLeaderhook);
}

export type PhaseKey = (typeof PHASES)[number]['key'];

/**
 * Nearest-rank percentiles (stats.ts) over every trial of a group. A phase
 * that did not happen within the run's timeout counts as later than any that
 * did (Infinity): where such trials decide the rank, the percentile is
 * "never", rather than a number over the trials that happened to finish.
 */
export interface PhaseStats {
  n: number;
  never: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function phaseStats(trials: readonly TrialRecord[], key: PhaseKey): PhaseStats {
  const values = trials.map((trial) => trial[key] ?? Number.POSITIVE_INFINITY);
  return {
    n: values.length,
    never: values.filter((value) => value === Number.POSITIVE_INFINITY).length,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    p99: percentile(values, 99),
    max: percentile(values, 100),
  };
}

/** How many trials each cause freed the lock in, most frequent first (ties by name). */
export function freedByCounts(trials: readonly TrialRecord[]): { freedBy: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const trial of trials) counts.set(trial.freedBy, (counts.get(trial.freedBy) ?? 0) + 1);
  return [...counts]
    .map(([freedBy, count]) => ({ freedBy, count }))
    .sort((a, b) => b.count - a.count || (a.freedBy < b.freedBy ? -1 : a.freedBy > b.freedBy ? 1 : 0));
}

export const splitBrainOf = (trials: readonly TrialRecord[]): number => trials.reduce((sum, trial) => sum + trial.splitBrain, 0);

/** "0.12 s"; Infinity (did not happen in time) is "never"; NaN (no trials) is "—". */
export function seconds(ms: number): string {
  if (Number.isNaN(ms)) return '—';
  return ms === Number.POSITIVE_INFINITY ? 'never' : `${(ms / 1000).toFixed(2)} s`;
}

/** The timeout as a reader says it: 60000 → "60 s", 45500 → "45.5 s". */
export const timeoutSeconds = (run: RunRecord): string => `${run.timeoutMs / 1000} s`;

export type Verdict = 'met' | 'not met' | 'not measured';

export interface TargetResult {
  target: string;
  /** The scenario the target was measured in, or "all scenarios". */
  scope: string;
  measured: string;
  verdict: Verdict;
}

/** The benchmark's targets: reported, not asserted; the thresholds are the issue's. */
export const LOCK_GONE_P99_MS = 250;
export const LEASE_SPEEDUP_AT_P50 = 15;

function lockGoneTargets(trials: readonly TrialRecord[]): TargetResult[] {
  const target = `lock gone p99 ≤ ${LOCK_GONE_P99_MS} ms after the delete, wherever R1 applies`;
  const scenarios = scenariosOf(trials).filter((scenario) => RELEASED_BY_R1.includes(scenario) && trialsOf(trials, scenario, true).length > 0);
  if (scenarios.length === 0) return [{ target, scope: 'no R1 scenario in this run', measured: '—', verdict: 'not measured' }];
  return scenarios.map((scenario) => {
    const stats = phaseStats(trialsOf(trials, scenario, true), 'lockFreedMs');
    const p99 = stats.p99 === Number.POSITIVE_INFINITY ? 'never' : `${stats.p99} ms`;
    return {
      target,
      scope: scenario,
      measured: `p99 ${p99} (${stats.n} trials with leaderhook${stats.never > 0 ? `, ${stats.never} never` : ''})`,
      verdict: stats.p99 <= LOCK_GONE_P99_MS ? 'met' : 'not met',
    };
  });
}

function leaseSpeedupTargets(trials: readonly TrialRecord[]): TargetResult[] {
  const target = `Lease: new leader p50 ≥ ${LEASE_SPEEDUP_AT_P50}× sooner than without leaderhook`;
  const scenarios = scenariosOf(trials).filter((scenario) => trials.some((trial) => trial.scenario === scenario && LEASE_OPERATORS.includes(trial.operator)));
  if (scenarios.length === 0) return [{ target, scope: 'no Lease scenario in this run', measured: '—', verdict: 'not measured' }];
  return scenarios.map((scenario) => {
    const withHook = trialsOf(trials, scenario, true);
    const without = trialsOf(trials, scenario, false);
    if (withHook.length === 0 || without.length === 0) {
      return { target, scope: scenario, measured: `trials ${withHook.length} with, ${without.length} without leaderhook`, verdict: 'not measured' };
    }
    const fast = phaseStats(withHook, 'newLeaderMs').p50;
    const slow = phaseStats(without, 'newLeaderMs').p50;
    const ratio = slow / fast;
    const times = `p50 ${seconds(fast)} with leaderhook, ${seconds(slow)} without`;
    if (fast === Number.POSITIVE_INFINITY) return { target, scope: scenario, measured: times, verdict: 'not met' };
    const speedup = ratio === Number.POSITIVE_INFINITY ? 'no new leader without it' : `${ratio.toFixed(1)}× sooner`;
    return { target, scope: scenario, measured: `${times}: ${speedup}`, verdict: ratio >= LEASE_SPEEDUP_AT_P50 ? 'met' : 'not met' };
  });
}

/** Judged with leaderhook; the baseline's count is shown beside it, since split brain there is a finding too. */
function splitBrainTarget(trials: readonly TrialRecord[]): TargetResult {
  const withHook = trials.filter((trial) => trial.withLeaderhook);
  const without = trials.filter((trial) => !trial.withLeaderhook);
  const count = splitBrainOf(withHook);
  return {
    target: '0 split brain (heartbeats written by a process that did not hold the lock)',
    scope: 'all scenarios',
    measured: `${count} in ${withHook.length} trials with leaderhook (${splitBrainOf(without)} in ${without.length} without)`,
    verdict: withHook.length === 0 ? 'not measured' : count === 0 ? 'met' : 'not met',
  };
}

export function targets(trials: readonly TrialRecord[]): TargetResult[] {
  return [...lockGoneTargets(trials), ...leaseSpeedupTargets(trials), splitBrainTarget(trials)];
}
