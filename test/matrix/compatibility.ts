/**
 * What `npm run test:matrix` records per Kubernetes version, and
 * docs/compatibility.md and the README's requirement block rendered from those
 * records alone: one JSON file per version in docs/compatibility/ (a later run
 * of a version replaces its file), beside the failover record of that run.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCK_GONE_P99_MS, phaseStats, seconds, splitBrainOf, splitRun, trialsOf } from '../bench/failover-summary.ts';
import { parseRecords, type TrialRecord } from '../bench/failover-trials.ts';
import { percentile } from '../bench/stats.ts';

/** Run first, on a cluster whose kubelet starts on an older minor, when one is built. */
export const KUBELET_UPGRADE_TEST = 'test/e2e/kubelet-upgrade.test.ts';

/** The core end-to-end set, run on every version, and what each file stands for. */
export const CORE_TESTS: readonly { file: string; covers: string }[] = [
  {
    file: 'test/e2e/admission.test.ts',
    covers: "workload warnings; the webhook down in `enabled` and `required` namespaces (the required entry's CEL matchConditions)",
  },
  { file: 'test/e2e/rollout-restart.test.ts', covers: 'R1 on `kubectl rollout restart`, both operators' },
  { file: 'test/e2e/failover.test.ts', covers: 'R1 for both operators, stuck Terminating, SIGTERM ignored; the controls without leaderhook' },
  { file: 'test/e2e/terminal-holder.test.ts', covers: 'R2: a Failed holder released while it still exists' },
  {
    file: KUBELET_UPGRADE_TEST,
    covers:
      'the kubelet upgraded in place from the newest older minor built (at most three older; the cluster-up step names it): no hook restarted, nothing released, R1 afterwards',
  },
  { file: 'test/integration/check.test.ts', covers: '`leaderhook check`: healthy, missing RoleBinding, webhook scaled to 0' },
  { file: 'test/integration/isolation.test.ts', covers: 'the cluster is joined to nothing' },
];

/** The kubelet-bound failover scenarios of bench:failover the matrix runs, and how often by default. */
export const MATRIX_SCENARIOS: readonly string[] = ['lfl-rollout', 'lease-rollout'];
export const MATRIX_TRIALS_DEFAULT = 20;
export const MATRIX_PODS_DEFAULT = 20;

/** The pod-start target per version (reported, not asserted); lock gone's is bench:failover's LOCK_GONE_P99_MS. */
export const HOOK_START_COST_P50_MS = 300;

export interface TestResult {
  file: string;
  name: string;
  outcome: 'passed' | 'failed' | 'skipped';
  durationMs: number;
  /** A failure's first line. */
  reason?: string;
}

export interface StepResult {
  /** "build", "cluster up", "images", a test file, "pod-start", "bench:failover", "cluster down". */
  name: string;
  ok: boolean;
  seconds: number;
  /** Why it failed: the exit code and the last line it printed. */
  detail?: string;
}

/** Times from test/bench/pod-start.bench.ts --json, in ms. */
export interface PodStartSamples {
  pods: number;
  plainMs: number[];
  injectedMs: number[];
  hookToOperatorMs: number[];
  hookRssMiB: number[];
}

export interface VersionResult {
  kind: 'kubernetes-version';
  /** "1.37", as --versions takes it. */
  minor: string;
  /** The API server's gitVersion, or the module file's version when no cluster came up. */
  version: string;
  command: string;
  startedAt: string;
  finishedAt: string;
  machine: string;
  steps: StepResult[];
  tests: TestResult[];
  podStart?: PodStartSamples;
  /** The bench:failover record of this run, a file name beside this one. */
  failoverRecord?: string;
}

/** A version's record as the renderer uses it, with its failover trials read. */
export interface VersionRun {
  result: VersionResult;
  trials: TrialRecord[];
}

export const recordFileOf = (minor: string): string => `v${minor}.json`;
export const failoverFileOf = (minor: string): string => `failover-v${minor}.jsonl`;

/** Orders "1.9" before "1.30". */
export const byMinor = (a: string, b: string): number => Number(a.split('.')[1]) - Number(b.split('.')[1]);

/** Every version's record in DIR, oldest version first; a record that does not parse names its file. */
export function readVersionRuns(dir: string): VersionRun[] {
  if (!existsSync(dir)) return [];
  const files = readdirSync(dir).filter((name) => /^v1\.\d+\.json$/.test(name));
  return files
    .map((name) => {
      let result: VersionResult;
      try {
        result = JSON.parse(readFileSync(join(dir, name), 'utf8')) as VersionResult;
      } catch (error) {
        throw new Error(`${join(dir, name)} is not a test:matrix record: ${(error as Error).message}`, { cause: error });
      }
      if (result.kind !== 'kubernetes-version' || `v${result.minor}.json` !== name) {
        throw new Error(`${join(dir, name)} is not the test:matrix record of Kubernetes ${name.slice(1, -5)}`);
      }
      const trials = result.failoverRecord ? splitRun(parseRecords(readFileSync(join(dir, result.failoverRecord), 'utf8'))).trials : [];
      return { result, trials };
    })
    .sort((a, b) => byMinor(a.result.minor, b.result.minor));
}

export interface VersionSummary {
  version: string;
  passed: number;
  failed: number;
  skipped: number;
  /** Steps that failed, besides tests: a build, the cluster, a benchmark. */
  failedSteps: StepResult[];
  /** Everything ran, no test failed, no split brain with leaderhook. */
  ok: boolean;
  plainStartP50?: number;
  hookCostP50?: number;
  hookCostP90?: number;
  scenarios: ScenarioSummary[];
}

export interface ScenarioSummary {
  scenario: string;
  trials: number;
  lockGoneP50: number;
  lockGoneP99: number;
  newLeaderWithP50: number;
  newLeaderWithoutP50: number;
  splitBrainWith: number;
  splitBrainWithout: number;
}

export function summarize({ result, trials }: VersionRun): VersionSummary {
  const count = (outcome: TestResult['outcome']) => result.tests.filter((test) => test.outcome === outcome).length;
  const scenarios = MATRIX_SCENARIOS.filter((scenario) => trialsOf(trials, scenario, true).length > 0).map((scenario): ScenarioSummary => {
    const withHook = trialsOf(trials, scenario, true);
    const without = trialsOf(trials, scenario, false);
    const lockGone = phaseStats(withHook, 'lockFreedMs');
    return {
      scenario,
      trials: withHook.length,
      lockGoneP50: lockGone.p50,
      lockGoneP99: lockGone.p99,
      newLeaderWithP50: phaseStats(withHook, 'newLeaderMs').p50,
      newLeaderWithoutP50: phaseStats(without, 'newLeaderMs').p50,
      splitBrainWith: splitBrainOf(withHook),
      splitBrainWithout: splitBrainOf(without),
    };
  });
  const isTestFile = (step: StepResult) => CORE_TESTS.some((core) => core.file === step.name);
  const failedSteps = result.steps.filter((step) => !step.ok && !isTestFile(step));
  // A test file that exited non-zero without a failed test (it crashed, or
  // timed out before reporting) counts as one failure of its own.
  const silentFailures = result.steps.filter(
    (step) => !step.ok && isTestFile(step) && !result.tests.some((test) => test.file === step.name && test.outcome === 'failed'),
  ).length;
  const start = result.podStart;
  const summary: VersionSummary = {
    version: result.version,
    passed: count('passed'),
    failed: count('failed') + silentFailures,
    skipped: count('skipped'),
    failedSteps,
    ok: false,
    scenarios,
    ...(start
      ? {
          plainStartP50: percentile(start.plainMs, 50),
          hookCostP50: percentile(start.injectedMs, 50) - percentile(start.plainMs, 50),
          hookCostP90: percentile(start.injectedMs, 90) - percentile(start.plainMs, 90),
        }
      : {}),
  };
  summary.ok =
    summary.failed === 0 &&
    failedSteps.length === 0 &&
    summary.passed > 0 &&
    scenarios.length === MATRIX_SCENARIOS.length &&
    scenarios.every((s) => s.splitBrainWith === 0);
  return summary;
}

const ms = (value: number | undefined): string => (value === undefined || Number.isNaN(value) ? '—' : `${Math.round(value)} ms`);
const tick = (met: boolean): string => (met ? '✓' : '✗');
const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** The minors between the lowest and the newest run that have no run: a claim of "or later" covers them untested. */
export function minorsNotRun(runs: readonly VersionRun[]): string[] {
  const minors = new Set(runs.map((run) => Number(run.result.minor.split('.')[1])));
  if (minors.size === 0) return [];
  const out: string[] = [];
  for (let m = Math.min(...minors) + 1; m < Math.max(...minors); m++) if (!minors.has(m)) out.push(`1.${m}`);
  return out;
}

/** The minor of the lowest version whose row passed, if any. */
export function lowestPassing(runs: readonly VersionRun[]): VersionRun | undefined {
  return runs.find((run) => summarize(run).ok);
}

/** Scenarios where the new leader came later with leaderhook than without, at p50: said in the README with the number. */
export function slowerWithLeaderhook(runs: readonly VersionRun[]): string[] {
  return runs.flatMap((run) =>
    summarize(run)
      .scenarios.filter((s) => s.newLeaderWithP50 > s.newLeaderWithoutP50)
      .map(
        (s) =>
          `on ${run.result.version}, ${s.scenario}: new leader p50 ${seconds(s.newLeaderWithP50)} with leaderhook against ${seconds(s.newLeaderWithoutP50)} without (${s.trials} trials each)`,
      ),
  );
}

/**
 * The README's requirement block, between `<!-- compatibility -->` and
 * `<!-- /compatibility -->`: the lowest version that passed, every version
 * that did, and where leaderhook was slower.
 */
export function requirementBlock(runs: readonly VersionRun[], page = 'docs/compatibility.md'): string {
  const lowest = lowestPassing(runs);
  if (!lowest) return `Requirements: no Kubernetes version has passed \`npm run test:matrix\` yet ([compatibility](${page})).`;
  const passing = runs.filter((run) => summarize(run).ok).map((run) => run.result.version);
  const failing = runs.filter((run) => !summarize(run).ok).map((run) => run.result.version);
  const slower = slowerWithLeaderhook(runs);
  const notRun = minorsNotRun(runs);
  return [
    `Requirements: Kubernetes **${lowest.result.minor} or later** on the API server and every node. Passed \`npm run test:matrix\`: ${passing.join(', ')}` +
      `${failing.length ? `; failed: ${failing.join(', ')}` : ''}${notRun.length ? `; not run: ${notRun.join(', ')}` : ''} ([compatibility](${page}), one run per version).`,
    slower.length
      ? `Where leaderhook made the new leader later: ${slower.join('; ')}.`
      : 'On every version tested, the new leader came sooner with leaderhook than without, at p50.',
  ].join(' ');
}

/** Replaces the README's requirement block; throws when its markers are missing. */
export function renderReadmeBlock(readme: string, runs: readonly VersionRun[]): string {
  const begin = '<!-- compatibility -->';
  const end = '<!-- /compatibility -->';
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end);
  if (from < 0 || to < from) throw new Error(`README.md: markers ${begin} ... ${end} are missing`);
  return `${readme.slice(0, from + begin.length)}\n${requirementBlock(runs)}\n${readme.slice(to)}`;
}

/** docs/compatibility.md. */
export function renderCompatibility(runs: readonly VersionRun[]): string {
  const summaries = runs.map(summarize);
  const lines: string[] = [
    '# Compatibility',
    '',
    'Generated by `npm run test:matrix` (test/matrix/matrix.ts) from the records in',
    '[compatibility/](compatibility/), one run per version: do not edit; run the matrix again.',
    '',
    requirementBlock(runs, 'compatibility.md'),
    '',
  ];
  if (runs.length === 0) return `${lines.join('\n')}\n`;
  lines.push(
    '## Per version',
    '',
    `Core tests: the end-to-end set below, on a fresh single-node cluster of that version. Pod start: ${runs[0]!.result.podStart?.pods ?? MATRIX_PODS_DEFAULT} operator pods each`,
    'without and with the injected hook (`test/bench/pod-start.bench.ts`), create → operator first log; the hook adds the difference of the percentiles.',
    `Failover: \`bench:failover\`, ${MATRIX_SCENARIOS.join(' and ')}, the leader pod of a Deployment of 2 deleted; lock gone is with leaderhook, after the delete.`,
    '',
    `| Kubernetes | core tests | pod start p50, plain | hook adds p50 / p90 | ${MATRIX_SCENARIOS.map((s) => `${s}: lock gone p50 / p99 | ${s}: new leader p50 with / without`).join(' | ')} | split brain with / without |`,
    `| --- | --- | ---: | ---: | ${MATRIX_SCENARIOS.map(() => '---: | ---:').join(' | ')} | ---: |`,
  );
  for (const summary of summaries) {
    const tests = `${summary.ok ? '✓' : '✗'} ${summary.passed} passed${summary.failed ? `, ${summary.failed} failed` : ''}${summary.skipped ? `, ${summary.skipped} skipped` : ''}${summary.failedSteps.length ? `; ${summary.failedSteps.map((step) => `${step.name} failed`).join(', ')}` : ''}`;
    const scenarioCells = MATRIX_SCENARIOS.map((name) => {
      const s = summary.scenarios.find((x) => x.scenario === name);
      if (!s) return '— | —';
      return `${ms(s.lockGoneP50)} / ${ms(s.lockGoneP99)} | ${seconds(s.newLeaderWithP50)} / ${seconds(s.newLeaderWithoutP50)}`;
    }).join(' | ');
    const splitBrain = summary.scenarios.length
      ? `${summary.scenarios.reduce((n, s) => n + s.splitBrainWith, 0)} / ${summary.scenarios.reduce((n, s) => n + s.splitBrainWithout, 0)}`
      : '—';
    lines.push(
      `| ${summary.version} | ${tests} | ${ms(summary.plainStartP50)} | ${ms(summary.hookCostP50)} / ${ms(summary.hookCostP90)} | ${scenarioCells} | ${splitBrain} |`,
    );
  }
  lines.push(
    '',
    '## Targets',
    '',
    'Measured, not asserted: the cost the hook adds to pod start, and how soon the lock is gone. Why a kubelet misses one:',
    '[performance.md, the kubelet per version](performance.md#the-kubelet-per-version).',
    '',
    `| Kubernetes | hook adds ≤ ${HOOK_START_COST_P50_MS} ms to pod start at p50 | ${MATRIX_SCENARIOS.map((s) => `${s}: lock gone ≤ ${LOCK_GONE_P99_MS} ms at p99`).join(' | ')} |`,
    `| --- | --- | ${MATRIX_SCENARIOS.map(() => '---').join(' | ')} |`,
  );
  for (const summary of summaries) {
    const start = summary.hookCostP50 === undefined ? '—' : `${tick(summary.hookCostP50 <= HOOK_START_COST_P50_MS)} ${ms(summary.hookCostP50)}`;
    const locks = MATRIX_SCENARIOS.map((name) => {
      const s = summary.scenarios.find((x) => x.scenario === name);
      return s ? `${tick(s.lockGoneP99 <= LOCK_GONE_P99_MS)} ${ms(s.lockGoneP99)}` : '—';
    }).join(' | ');
    lines.push(`| ${summary.version} | ${start} | ${locks} |`);
  }
  lines.push(
    '',
    '## Core tests',
    '',
    `| file | test | ${runs.map((run) => run.result.version).join(' | ')} |`,
    `| --- | --- | ${runs.map(() => '---').join(' | ')} |`,
  );
  const names: { file: string; name: string }[] = [];
  for (const run of runs) {
    for (const test of run.result.tests) if (!names.some((n) => n.file === test.file && n.name === test.name)) names.push(test);
  }
  const order = (file: string) => CORE_TESTS.findIndex((core) => core.file === file);
  names.sort((a, b) => order(a.file) - order(b.file));
  for (const { file, name } of names) {
    const outcomes = runs.map((run) => {
      const test = run.result.tests.find((t) => t.file === file && t.name === name);
      if (!test) return 'not run';
      if (test.outcome === 'failed') return `✗ ${cell(test.reason ?? '')}`;
      return test.outcome === 'skipped' ? 'skipped' : '✓';
    });
    lines.push(`| ${file.replace(/^test\//, '')} | ${cell(name)} | ${outcomes.join(' | ')} |`);
  }
  lines.push('', 'What each file stands for:', '');
  for (const core of CORE_TESTS) lines.push(`- \`${core.file}\`: ${core.covers}`);
  lines.push('', '## Runs', '');
  for (const { result } of runs) {
    const steps = result.steps.map((step) => `${step.name} ${step.ok ? '' : '✗ '}${step.seconds} s${step.detail ? ` (${cell(step.detail)})` : ''}`).join(', ');
    lines.push(`- **${result.version}**: \`${result.command}\`, ${result.startedAt} to ${result.finishedAt}; ${result.machine}. Steps: ${steps}.`);
  }
  return `${lines.join('\n')}\n`;
}
