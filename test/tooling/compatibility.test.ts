/**
 * test:matrix's records and what is rendered from them: the golden
 * compatibility page of test/testdata/matrix/ (REFRESH_GOLDEN=1 rewrites it),
 * what makes a version fail, the README block and docs/compatibility.md
 * against the committed records, the reporter on a real node:test run, and
 * the matrix's refusals.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  lowestPassing,
  readVersionRuns,
  renderCompatibility,
  renderReadmeBlock,
  requirementBlock,
  slowerWithLeaderhook,
  summarize,
  type TestResult,
} from '../matrix/compatibility.ts';

const repo = join(import.meta.dirname, '..', '..');
const fixtures = join(repo, 'test/testdata/matrix');
const runs = readVersionRuns(fixtures);

describe('compatibility records', () => {
  test('the page rendered from the fixture records is the golden one', () => {
    const golden = join(fixtures, 'compatibility.md');
    const rendered = renderCompatibility(runs);
    if (process.env.REFRESH_GOLDEN === '1') writeFileSync(golden, rendered);
    assert.equal(rendered, readFileSync(golden, 'utf8'), 'test/testdata/matrix/compatibility.md differs (REFRESH_GOLDEN=1 rewrites it)');
  });

  test('a failed test fails its version; the lowest passing version is the requirement', () => {
    const [v129, v130, v133] = runs.map(summarize);
    assert.equal(v129!.ok, false);
    assert.equal(v129!.failed, 1);
    assert.equal(v130!.ok, true);
    assert.equal(v133!.ok, true);
    assert.equal(lowestPassing(runs)?.result.minor, '1.30');
    assert.match(requirementBlock(runs), /Kubernetes \*\*1\.30 or later\*\*.*failed: v1\.29\.15/);
  });

  test('a test file that exits non-zero without a failed test counts as a failure', () => {
    const run = structuredClone(runs[1]!);
    const step = run.result.steps.find((s) => s.name === 'test/e2e/admission.test.ts')!;
    step.ok = false;
    step.detail = 'ended after 20 min';
    assert.equal(summarize(run).failed, 1);
    assert.equal(summarize(run).ok, false);
  });

  test('split brain with leaderhook fails the version; a missing failover record does too', () => {
    const split = structuredClone(runs[1]!);
    split.trials.find((t) => t.withLeaderhook)!.splitBrain = 1;
    assert.equal(summarize(split).ok, false);
    const noFailover = structuredClone(runs[1]!);
    noFailover.trials = [];
    assert.equal(summarize(noFailover).ok, false);
  });

  test('a scenario where the new leader came later with leaderhook is named, with both numbers', () => {
    assert.deepEqual(slowerWithLeaderhook(runs), ['on v1.33.13, lfl-rollout: new leader p50 2.51 s with leaderhook against 1.90 s without (5 trials each)']);
  });

  test('the README block is replaced between its markers, and missing markers are an error', () => {
    const readme = 'a\n<!-- compatibility -->\nold\n<!-- /compatibility -->\nb\n';
    assert.equal(renderReadmeBlock(readme, runs), `a\n<!-- compatibility -->\n${requirementBlock(runs)}\n<!-- /compatibility -->\nb\n`);
    assert.throws(() => renderReadmeBlock('no markers', runs), /markers <!-- compatibility -->/);
  });

  test("README's requirement block and docs/compatibility.md are what the committed records render", () => {
    const committed = readVersionRuns(join(repo, 'docs/compatibility'));
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    assert.equal(renderReadmeBlock(readme, committed), readme, 'README.md: run npm run test:matrix -- --render');
    assert.equal(
      readFileSync(join(repo, 'docs/compatibility.md'), 'utf8'),
      renderCompatibility(committed),
      'docs/compatibility.md: run npm run test:matrix -- --render',
    );
  });
});

test('the reporter writes one line per test, the failure reason, and a suite that failed on its own', () => {
  const dir = mkdtempSync(join(tmpdir(), 'matrix-reporter-'));
  try {
    const out = join(dir, 'results.jsonl');
    const run = spawnSync(
      process.execPath,
      ['--test', `--test-reporter=${join(repo, 'test/matrix/reporter.ts')}`, `--test-reporter-destination=${out}`, join(fixtures, 'reporter-fixture.ts')],
      // Without the parent runner's context the child reports to its own reporters, not to this test.
      { cwd: repo, encoding: 'utf8', env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
    );
    assert.equal(run.status, 1, 'the fixture has failures');
    const results = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as TestResult);
    const byName = new Map(results.map((r) => [r.name, r]));
    assert.equal(byName.get('passes')?.outcome, 'passed');
    assert.equal(byName.get('fails')?.outcome, 'failed');
    assert.match(byName.get('fails')?.reason ?? '', /one is not two/);
    assert.equal(byName.get('skipped')?.outcome, 'skipped');
    assert.equal(byName.get('a suite whose setup fails (suite)')?.outcome, 'failed');
    assert.match(byName.get('a suite whose setup fails (suite)')?.reason ?? '', /no cluster/);
    assert.ok(results.every((r) => r.file === 'test/testdata/matrix/reporter-fixture.ts'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('npm run test:matrix refuses bad input before anything runs', () => {
  const matrix = (...args: string[]) => spawnSync(process.execPath, [join(repo, 'test/matrix/matrix.ts'), ...args], { cwd: repo, encoding: 'utf8' });
  for (const [args, message] of [
    [['--versions', '1.99'], /--versions: 1\.99 is not a version test\/cluster\/build\.sh supports: 1\.30, /],
    [['--versions', ''], /--versions: \(empty\) is not a version/],
    [['--trials', '0'], /--trials must be a positive whole number, got 0/],
    [['--pods', 'x'], /--pods must be a positive whole number, got x/],
    [['--bogus'], /Unknown option '--bogus'/],
  ] as const) {
    test(args.join(' '), () => {
      const run = matrix(...args);
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, message);
    });
  }
  test('--help', () => {
    const run = matrix('--help');
    assert.equal(run.status, 0);
    assert.match(run.stdout, /^usage: npm run test:matrix -- \[--versions/);
  });
});
