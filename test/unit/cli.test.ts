import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const cli = path.join(import.meta.dirname, '../../src/cli.ts');
const run = (...args: string[]) =>
  spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...process.env, LEADERHOOK_GRACE_PERIOD_FLOOR: '' } });

test('version prints the package version', () => {
  const r = run('version');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^leaderhook \d+\.\d+\.\d+/);
});

test('every command has --help that names its flags and their env variables', () => {
  for (const [command, flag, env] of [
    ['webhook', '--grace-period-floor', 'LEADERHOOK_GRACE_PERIOD_FLOOR'],
    ['release', '--margin', 'LEADERHOOK_MARGIN'],
  ] as const) {
    const r = run(command, '--help');
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.includes(flag) && r.stdout.includes(env), r.stdout);
  }
});

test('a bad flag value exits 2 with a message that names the flag', () => {
  const r = run('webhook', '--grace-period-floor=soon');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--grace-period-floor: "soon" is not a duration/);
});

test('contradictory settings are refused before anything starts', () => {
  const r = run('webhook', '--grace-period-floor=30s', '--grace-period-cap=10s', '--dev', '--listen=127.0.0.1:0');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--grace-period-cap \(10s\) is below --grace-period-floor \(30s\)/);
});

test('an unknown command exits 2 and lists the commands', () => {
  const r = run('frobnicate');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command "frobnicate"/);
  assert.match(r.stderr, /webhook/);
});
