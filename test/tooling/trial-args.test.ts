/**
 * The trial benchmarks' options (test/bench/trial-args.ts): a record is never
 * overwritten, and --append adds a run only to a record a report can render
 * with it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { finishRunRecord, parseTrialArgs, recordedTrials, startRecord } from '../bench/trial-args.ts';
import type { RunRecord } from '../bench/failover-trials.ts';

const options = { scenarios: ['a', 'b'], usage: 'usage', defaultTimeoutSeconds: 45, outPrefix: 'test' };
const dir = mkdtempSync(join(tmpdir(), 'trial-args-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const run = (startedAt: string, timeoutMs = 45_000): RunRecord => ({ kind: 'run', command: 'npm run bench:x --', startedAt, machine: 'm', timeoutMs });
const trial = (scenario: string, withLeaderhook: boolean, n: number) => ({ kind: 'trial', scenario, withLeaderhook, trial: n });

function record(name: string, lines: object[]): string {
  const file = join(dir, name);
  writeFileSync(file, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  return file;
}

describe('parseTrialArgs --out and --append', () => {
  it('refuses a record that exists without --append, and says how to add to it', () => {
    const file = record('existing.jsonl', [run('2026-12-01T00:00:00.000Z')]);
    assert.throws(
      () => parseTrialArgs(['--out', file], options),
      /--out .*existing\.jsonl exists: give --append to add this run's trials to it, or another file/,
    );
  });

  it('takes --append only with --out of a record that exists', () => {
    assert.throws(() => parseTrialArgs(['--append'], options), /--append needs --out FILE/);
    assert.throws(() => parseTrialArgs(['--append', '--out', join(dir, 'missing.jsonl')], options), /--append needs --out FILE/);
  });

  it('refuses to append to a file that is not a trial record, or one of another timeout', () => {
    const notRecord = join(dir, 'notes.txt');
    writeFileSync(notRecord, 'hello\n');
    assert.throws(() => parseTrialArgs(['--append', '--out', notRecord], options), /does not start with a run line/);
    const slow = record('slow.jsonl', [run('2026-12-01T00:00:00.000Z', 90_000)]);
    assert.throws(() => parseTrialArgs(['--append', '--out', slow], options), /was run with --timeout 90; .* so give the same/);
    assert.equal(parseTrialArgs(['--append', '--out', slow, '--timeout', '90'], options).append, true);
  });

  it('refuses --append where the report renders one run', () => {
    const file = record('faults.jsonl', [run('2026-12-01T00:00:00.000Z')]);
    assert.throws(() => parseTrialArgs(['--append', '--out', file], { ...options, appendable: false }), /renders one run; write a new record/);
  });
});

describe('a record with a run appended', () => {
  it('numbers on from the trials it holds, per scenario and mode', () => {
    const file = record('numbered.jsonl', [run('2026-12-01T00:00:00.000Z'), trial('a', true, 1), trial('a', true, 2), trial('a', false, 1)]);
    const earlier = recordedTrials(file);
    assert.deepEqual([earlier('a', true), earlier('a', false), earlier('b', true)], [2, 1, 0]);
    assert.equal(recordedTrials(join(dir, 'new.jsonl'))('a', true), 0);
  });

  it('keeps the first run line and finishes its own', () => {
    const file = record('two-runs.jsonl', [run('2026-12-01T00:00:00.000Z'), trial('a', true, 1)]);
    const second = run('2026-12-02T00:00:00.000Z');
    startRecord({ out: file, append: true }, second);
    writeFileSync(file, `${readFileSync(file, 'utf8')}${JSON.stringify(trial('a', true, 2))}\n`);
    finishRunRecord(file, second);
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string; startedAt?: string; finishedAt?: string });
    assert.deepEqual(
      lines.map((line) => [line.kind, line.startedAt, line.finishedAt !== undefined]),
      [
        ['run', '2026-12-01T00:00:00.000Z', false],
        ['trial', undefined, false],
        ['run', '2026-12-02T00:00:00.000Z', true],
        ['trial', undefined, false],
      ],
    );
  });
});
