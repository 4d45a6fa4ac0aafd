/**
 * The command line of the whole-number benchmarks (bench:rollout,
 * hook-footprint, hook-aging): defaults, a bad number or list or an existing
 * record file refused with the option named, before anything touches a
 * cluster; and every benchmark's answer to a bad option (optionsOrExit).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseBenchArgs } from '../bench/bench-args.ts';

const options = { replicas: { default: 100, min: 1 }, configmaps: { default: 2000, min: 0 } };
const parse = (argv: string[]) => parseBenchArgs('USAGE', options, argv);

describe('parseBenchArgs', () => {
  it('gives the defaults, and the numbers given', () => {
    assert.deepEqual(parse([]), { replicas: 100, configmaps: 2000 });
    assert.deepEqual(parse(['--replicas', '7', '--configmaps', '0']), { replicas: 7, configmaps: 0 });
  });

  it('refuses what is not a whole number of at least the minimum, naming the option and showing the usage', () => {
    for (const [argv, message] of [
      [['--replicas', 'ten'], /--replicas must be a whole number of at least 1, got ten\nUSAGE/],
      [['--replicas', '0'], /--replicas must be a whole number of at least 1, got 0/],
      [['--configmaps', '1.5'], /--configmaps must be a whole number of at least 0, got 1.5/],
      [['--configmaps=-1'], /--configmaps must be a whole number of at least 0/],
    ] as const) {
      assert.throws(() => parse([...argv]), message);
    }
  });

  it('takes a list where the option is one, and refuses a list with anything but whole numbers of at least its minimum', () => {
    const withList = { leases: { default: [50], min: 0 }, minutes: { default: 60, min: 1 } };
    const parseList = (argv: string[]) => parseBenchArgs('USAGE', withList, argv);
    assert.deepEqual(parseList([]), { leases: [50], minutes: 60 });
    assert.deepEqual(parseList(['--leases', '0,10, 50', '--minutes', '5']), { leases: [0, 10, 50], minutes: 5 });
    assert.deepEqual(parseList(['--leases', '7']), { leases: [7], minutes: 60 });
    for (const text of ['0,,50', '10,-1', 'ten', '', '1.5', '10,']) {
      assert.throws(() => parseList(['--leases', text]), /--leases must list whole numbers of at least 0, got .*\nUSAGE/, text);
    }
    assert.throws(() => parseList(['--leases', '0,10', '--minutes', '0,10']), /--minutes must be a whole number of at least 1, got 0,10/);
  });

  it('takes a text option as it is written, flags included when given with =', () => {
    const withText = { 'node-flags': { default: '' }, minutes: { default: 60, min: 1 } };
    const parseText = (argv: string[]) => parseBenchArgs('USAGE', withText, argv);
    assert.deepEqual(parseText([]), { 'node-flags': '', minutes: 60 });
    assert.deepEqual(parseText(['--node-flags=--optimize-for-size --max-semi-space-size=1']), {
      'node-flags': '--optimize-for-size --max-semi-space-size=1',
      minutes: 60,
    });
    // a value that looks like an option, given apart, is refused rather than taken for the option it looks like
    assert.throws(() => parseText(['--node-flags', '--optimize-for-size']), /ambiguous/);
  });

  it('refuses an unknown option', () => {
    assert.throws(() => parse(['--replica', '3']), /Unknown option '--replica'/);
  });

  it('takes a new record file and refuses one that exists', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-args-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    assert.equal(parse(['--json', join(dir, 'new.json')]).json, join(dir, 'new.json'));
    writeFileSync(join(dir, 'old.json'), '{}\n');
    assert.throws(() => parse(['--json', join(dir, 'old.json')]), /--json .*old\.json exists: give a new file/);
    assert.throws(() => parse(['--json', join(dir, 'no-such-folder', 'new.json')]), /folder .*no-such-folder does not exist/);
  });
});

describe('every benchmark on a bad option', () => {
  const benches = ['failover', 'faults', 'kopf-failover', 'hook-aging', 'hook-footprint', 'rollout', 'watch-transport', 'webhook-connections', 'scale', 'soak'];
  it('answers with the message and the usage and exit status 2, before it touches a cluster, not with a stack', () => {
    for (const bench of benches) {
      const run = spawnSync(process.execPath, [`test/bench/${bench}.bench.ts`, '--no-such-option'], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(run.status, 2, `${bench}: exit status, stderr: ${run.stderr}`);
      assert.match(run.stderr, /^[\w:.-]+: Unknown option '--no-such-option'\n/, bench);
      assert.match(run.stderr, /\n\n?usage: /i, `${bench} shows its usage`);
      assert.doesNotMatch(run.stderr, /\n\s+at /, `${bench} prints no stack`);
    }
  });
});
