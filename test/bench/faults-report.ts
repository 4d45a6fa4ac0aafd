/**
 * docs/faults.md, rendered from the fault benchmark's record (fault-trials.ts).
 * Pure: no clock, a stable order, so the same record always gives the same
 * bytes. Per scenario and mode: how the trials ended against what the fault
 * should lead to, how soon another pod led, what freed the lock, the hooks'
 * releases, hook restarts and split brain.
 */
import { writeFile } from 'node:fs/promises';
import { FAULT_SCENARIOS, type FaultOutcome, type FaultRecord, type FaultTrialRecord } from './fault-trials.ts';
import type { RunRecord } from './failover-trials.ts';
import { seconds, timeoutSeconds } from './failover-summary.ts';
import { mean, meanDifference, percentile } from './stats.ts';
import { row, runSpan } from './report-format.ts';

const MODES = [
  { withLeaderhook: true, label: 'with leaderhook' },
  { withLeaderhook: false, label: 'without' },
] as const;

const OUTCOMES: readonly FaultOutcome[] = ['new leader', 'lock kept', 'no leader'];

/** Scenarios in FAULT_SCENARIOS' order, then any the record names that it does not, by name. */
function scenariosOf(trials: readonly FaultTrialRecord[]): string[] {
  const known = Object.keys(FAULT_SCENARIOS);
  const named = new Set(trials.map((trial) => trial.scenario));
  return [...known.filter((scenario) => named.has(scenario)), ...[...named].filter((scenario) => !known.includes(scenario)).sort()];
}

function splitRun(records: readonly FaultRecord[]): { run: RunRecord; trials: FaultTrialRecord[] } {
  const runs = records.filter((record): record is RunRecord => record.kind === 'run');
  if (runs.length !== 1) throw new Error(`a fault record holds exactly one "run" line; this one has ${runs.length}`);
  const trials = records.filter((record): record is FaultTrialRecord => record.kind === 'fault-trial');
  return { run: runs[0]!, trials: [...trials].sort((a, b) => a.trial - b.trial) };
}

/** "3 of 3 new leader" style counts, in OUTCOMES' order. */
function outcomeCounts(trials: readonly FaultTrialRecord[]): string {
  return OUTCOMES.map((outcome) => [outcome, trials.filter((trial) => trial.outcome === outcome).length] as const)
    .filter(([, count]) => count > 0)
    .map(([outcome, count]) => `${outcome} ${count}`)
    .join(', ');
}

/** Nearest-rank p50 and max of the new leader's time, a trial without one counting as later than any ("never"). */
function newLeaderCells(trials: readonly FaultTrialRecord[]): [string, string] {
  const values = trials.map((trial) => trial.newLeaderMs ?? Number.POSITIVE_INFINITY);
  return [seconds(percentile(values, 50)), seconds(percentile(values, 100))];
}

function tally(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([value, count]) => `${value} ×${count}`)
    .join('; ');
}

function asExpectedOutcome({ expected, outcome }: FaultTrialRecord): boolean {
  if (expected === 'failover') return outcome === 'new leader';
  if (expected === 'lock kept') return outcome === 'lock kept';
  return outcome !== 'no leader';
}

/** One figure per mode (p50, mean, range) and the difference of the means with its 95 % interval; undefined where a trial lacks the figure. */
function modeComparison(trials: readonly FaultTrialRecord[], figure: (trial: FaultTrialRecord) => number | undefined): string {
  const valuesOf = (withLeaderhook: boolean) =>
    trials.flatMap((trial) => {
      const value = trial.withLeaderhook === withLeaderhook ? figure(trial) : undefined;
      return value === undefined ? [] : [value];
    });
  const perMode = MODES.filter((mode) => valuesOf(mode.withLeaderhook).length > 0).map((mode) => {
    const values = valuesOf(mode.withLeaderhook);
    return `${mode.label} p50 ${seconds(percentile(values, 50))}, mean ${seconds(mean(values))}, ${seconds(Math.min(...values))} to ${seconds(Math.max(...values))} (${values.length} trial${values.length === 1 ? '' : 's'})`;
  });
  const { difference, halfWidth } = meanDifference(valuesOf(true), valuesOf(false));
  const told = Number.isNaN(halfWidth)
    ? ''
    : `; difference of the means, with less without: ${(difference / 1000).toFixed(2)} ± ${(halfWidth / 1000).toFixed(2)} s`;
  return `${perMode.join('; ')}${told}`;
}

/**
 * Where the scenario followed it, how long nobody led: the figure that decides
 * whether leaderhook changes a fault it does not act on. Counted from the
 * lock's last write as well, which takes out where in the renewal period the
 * fault fell; the difference's interval says whether a gap is more than chance.
 */
function ledAgainLines(trials: readonly FaultTrialRecord[]): string[] {
  if (!trials.some((trial) => trial.ledAgainMs !== undefined)) return [];
  const fromWrite = (trial: FaultTrialRecord) =>
    trial.ledAgainMs === undefined || trial.sinceLockWriteMs === undefined ? undefined : trial.ledAgainMs + trial.sinceLockWriteMs;
  return [
    '',
    `Led again, by a new process in either pod (the table's new leader counts another pod only), after the fault: ${modeComparison(trials, (trial) => trial.ledAgainMs)}.`,
    `After the lock's last write before the fault: ${modeComparison(trials, fromWrite)}.`,
    'The intervals are 95 % (Welch, normal approximation): a difference inside its ± is not told apart from chance.',
  ];
}

function scenarioSection(scenario: string, trials: readonly FaultTrialRecord[]): string[] {
  const text = FAULT_SCENARIOS[scenario];
  const lines = [`## ${scenario}`, ''];
  if (text) lines.push(`${text.description.charAt(0).toUpperCase()}${text.description.slice(1)}. Times from ${text.zero}; expected: ${text.expected}.`, '');
  lines.push(
    row(['mode', 'trials', 'as expected', 'outcome', 'new leader p50', 'max', 'lock freed by', "hooks' releases", 'hook restarts', 'split brain']),
    row(['---', '---:', '---:', '---', '---:', '---:', '---', '---', '---:', '---:']),
  );
  for (const mode of MODES) {
    const inMode = trials.filter((trial) => trial.withLeaderhook === mode.withLeaderhook);
    if (inMode.length === 0) continue;
    const asExpected = inMode.filter((trial) => asExpectedOutcome(trial)).length;
    lines.push(
      row([
        mode.label,
        inMode.length,
        `${asExpected} of ${inMode.length}`,
        outcomeCounts(inMode),
        ...newLeaderCells(inMode),
        tally(inMode.map((trial) => trial.freedBy)),
        tally(inMode.flatMap((trial) => trial.releases)) || 'none',
        inMode.reduce((sum, trial) => sum + trial.hookRestarts, 0),
        inMode.reduce((sum, trial) => sum + trial.splitBrain, 0),
      ]),
    );
  }
  lines.push(...ledAgainLines(trials));
  const unobserved = MODES.map(
    (mode) => [mode.label, trials.filter((t) => t.withLeaderhook === mode.withLeaderhook).reduce((sum, t) => sum + (t.unobserved ?? 0), 0)] as const,
  );
  if (unobserved.some(([, count]) => count > 0)) {
    lines.push(
      '',
      `Unobserved stretches of the lock's history (a watch had to relist; the split-brain check cannot vouch for them, nor did it see two leaders there): ${unobserved.map(([label, count]) => `${count} ${label}`).join(', ')}.`,
    );
  }
  const details = tally(trials.filter((trial) => trial.detail).map((trial) => `${trial.withLeaderhook ? 'with' : 'without'}: ${trial.detail}`));
  if (details) lines.push('', `Seen: ${details}.`);
  lines.push('');
  return lines;
}

/** The whole of docs/faults.md for one run's record. */
export function renderFaultsMarkdown(records: readonly FaultRecord[]): string {
  const { run, trials } = splitRun(records);
  const span = runSpan(run, (ms) => `${Math.round(ms / 60_000)} min`);
  const lines = [
    '<!-- Generated by test/bench/faults.bench.ts from its record; do not edit, run the benchmark again. -->',
    '',
    '# Faults, with leaderhook and without',
    '',
    '```sh',
    run.command,
    '```',
    '',
    ...(/(^|\s)--out(=|\s)/.test(run.command)
      ? [
          'The command as it was run. Its `--out` file now holds this record, and the benchmark never appends to a record:',
          'to run it again, give `--out` a file that does not exist yet, or leave it out (a new file in /tmp).',
          '',
        ]
      : []),
    `Run ${span}: ${trials.length} trials. Machine: ${run.machine}.`,
    '',
    'Each trial puts a fresh pair of namespaces, one opted in to leaderhook and one not, through the same fault at the same moment,',
    `and follows who holds the lock for up to ${timeoutSeconds(run)}: a new leader, the lock kept by the old leader (running or not), or no leader.`,
    '"As expected": a new leader where the fault stopped the leader for good, the lock kept where it did not.',
    'Nearest-rank percentiles; a trial with no new leader in time counts as "never".',
    '',
    ...scenariosOf(trials).flatMap((scenario) =>
      scenarioSection(
        scenario,
        trials.filter((trial) => trial.scenario === scenario),
      ),
    ),
  ];
  return lines.join('\n');
}

export async function writeFaultsReport(records: readonly FaultRecord[], file: string): Promise<void> {
  await writeFile(file, renderFaultsMarkdown(records));
}
