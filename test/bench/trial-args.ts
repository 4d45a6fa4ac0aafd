/**
 * The command line and the run line shared by the trial benchmarks on the
 * local cluster (`npm run bench:failover`, `npm run bench:faults`): how many
 * trials of which scenarios, how long a trial waits, where the record goes.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { kubectl } from '../support/leaderhook.ts';
import { say } from '../support/progress.ts';
import { parseRecords, type RunRecord } from './failover-trials.ts';

export interface TrialArgs {
  /** The scenarios to run, in the order given (default: all, in their own order). */
  scenarios: string[];
  /** Trials per scenario and mode. */
  trialsOf: (scenario: string) => number;
  timeoutMs: number;
  /** The record, one JSON line per trial; one that exists only with --append. */
  out: string;
  /** Continue the record `out` holds: a second run line, its trials numbered after the record's. */
  append: boolean;
  docs?: string;
}

/** Usage lines for the options parseTrialArgs reads. */
export function trialOptionsUsage(scenarios: readonly string[], defaultTimeoutSeconds: number, appendable = true): string {
  return `  --trials N       trials per scenario and mode (with and without leaderhook)
  --trials-of S=N  N trials for scenario S instead (repeatable)
  --scenario S     one of ${scenarios.join(', ')} (repeatable; default all)
  --timeout S      seconds a trial waits for a new leader before it counts as "never within S s" (default ${defaultTimeoutSeconds})
  --out FILE       the trial record, one JSON line per trial (default: a new file in /tmp)
${appendable ? "  --append         add this run's trials to the record --out holds (more trials of a scenario later)\n" : ''}  --docs DIR       where the report is rendered at the end (default: none)
`;
}

/**
 * Reads the options; prints `usage` and exits on --help; throws with the
 * option and what it expects on anything else wrong, before any trial ran.
 */
export function parseTrialArgs(
  argv: readonly string[],
  {
    scenarios: known,
    usage,
    defaultTimeoutSeconds,
    outPrefix,
    appendable = true,
  }: {
    scenarios: readonly string[];
    usage: string;
    defaultTimeoutSeconds: number;
    outPrefix: string;
    /** Whether the record's report renders several runs (bench:failover's format does). */
    appendable?: boolean;
  },
): TrialArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      trials: { type: 'string', default: '1' },
      'trials-of': { type: 'string', multiple: true },
      scenario: { type: 'string', multiple: true },
      timeout: { type: 'string', default: String(defaultTimeoutSeconds) },
      out: { type: 'string' },
      docs: { type: 'string' },
      append: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const trials = Number(values.trials);
  if (!Number.isInteger(trials) || trials < 1) throw new Error(`--trials must be a positive whole number, got ${values.trials}`);
  const counts = new Map<string, number>();
  for (const item of values['trials-of'] ?? []) {
    const [name, count] = item.split('=');
    if (!known.includes(name!) || !Number.isInteger(Number(count)) || Number(count) < 1) {
      throw new Error(`--trials-of ${item}: expected SCENARIO=N with a scenario of ${known.join(', ')} and N ≥ 1`);
    }
    counts.set(name!, Number(count));
  }
  const timeoutMs = Number(values.timeout) * 1000;
  if (!(timeoutMs >= 5000)) throw new Error(`--timeout must be at least 5 seconds, got ${values.timeout}`);
  const scenarios = values.scenario ?? [...known];
  for (const name of scenarios) if (!known.includes(name)) throw new Error(`--scenario ${name}: not one of ${known.join(', ')}`);
  const append = values.append === true;
  if (append && !appendable) throw new Error("--append: this benchmark's report renders one run; write a new record");
  if (append && (values.out === undefined || !existsSync(values.out))) throw new Error('--append needs --out FILE, the record of an earlier run, to add to');
  const out = values.out ?? `/tmp/${outPrefix}-${new Date().toISOString().replace(/[:.]/g, '-')}.jsonl`;
  if (!append && existsSync(out)) throw new Error(`--out ${out} exists: give --append to add this run's trials to it, or another file`);
  if (append) checkAppendable(out, timeoutMs);
  return { scenarios, trialsOf: (scenario) => counts.get(scenario) ?? trials, timeoutMs, out, append, docs: values.docs };
}

/** The earlier record must be one a report can render with this run: a run line first, the same timeout. */
function checkAppendable(out: string, timeoutMs: number): void {
  const notRecord = `--append: ${out} does not start with a run line; it is not a trial record`;
  let first: ReturnType<typeof parseRecords>[number] | undefined;
  try {
    [first] = parseRecords(readFileSync(out, 'utf8'));
  } catch (error) {
    throw new Error(`${notRecord} (${(error as Error).message})`, { cause: error });
  }
  if (first?.kind !== 'run') throw new Error(notRecord);
  if (first.timeoutMs !== timeoutMs) {
    throw new Error(`--append: ${out} was run with --timeout ${first.timeoutMs / 1000}; its percentiles count "never" against that, so give the same`);
  }
}

/** The trials `out` already holds per scenario and mode: where this run's numbering goes on from. */
export function recordedTrials(out: string): (scenario: string, withLeaderhook: boolean) => number {
  const trials = existsSync(out) ? parseRecords(readFileSync(out, 'utf8')).filter((record) => record.kind === 'trial') : [];
  return (scenario, withLeaderhook) => trials.filter((trial) => trial.scenario === scenario && trial.withLeaderhook === withLeaderhook).length;
}

/** Writes the run line: a new record, or one more run of the record with --append. */
export function startRecord(args: Pick<TrialArgs, 'out' | 'append'>, run: RunRecord): void {
  if (args.append) appendFileSync(args.out, `${JSON.stringify(run)}\n`);
  else writeFileSync(args.out, `${JSON.stringify(run)}\n`);
  say(`${args.append ? 'adding to' : 'recording to'} ${args.out}`);
}

/** The run line of a record: the command as typed, when, and on what. */
export function runRecord(script: string, argv: readonly string[], timeoutMs: number): RunRecord {
  const version =
    kubectl(['version', '-o', 'json'])
      .match(/"gitVersion":\s*"(v[^"]+)"/g)
      ?.at(-1)
      ?.replace(/.*"(v[^"]+)"/, '$1') ?? '?';
  const nodes = kubectl(['get', 'nodes', '-o', 'name']).split('\n').filter(Boolean).length;
  return {
    kind: 'run',
    command: `npm run ${script} -- ${argv.join(' ')}`.trim(),
    startedAt: new Date().toISOString(),
    machine: `${cpus().length} cores; the local cluster of test/cluster (Kubernetes ${version}, ${nodes === 1 ? 'one node' : `${nodes} nodes`})`,
    timeoutMs,
  };
}

export { say } from '../support/progress.ts';

/** Writes the run's end into its run line of the record `out` (the first, or the one --append added), and says how long it took. */
export function finishRunRecord(out: string, run: { startedAt: string }): void {
  const lines = readFileSync(out, 'utf8').split('\n');
  const own = lines.findIndex((line) => line.startsWith('{"kind":"run"') && (JSON.parse(line) as { startedAt?: string }).startedAt === run.startedAt);
  lines[Math.max(own, 0)] = JSON.stringify({ ...run, finishedAt: new Date().toISOString() });
  writeFileSync(out, lines.join('\n'));
  say(`done in ${((Date.now() - Date.parse(run.startedAt)) / 1000).toFixed(0)} s: ${out}`);
}
