/**
 * The local cluster's scripts refuse bad input with one clear line before
 * they touch anything: a node count up.sh cannot make, a Kubernetes version
 * build.sh does not know. (What they do with good input is the cluster
 * tests' business.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

const repo = path.join(import.meta.dirname, '../..');
// The refusals must come before anything is read or made. Should one ever
// be missing, the script would go on to build a cluster: run as a user
// without root, from a copy anyone can read, it stops at its root check
// instead (and a short timeout ends it in any case).
const scripts = mkdtempSync(path.join(tmpdir(), 'leaderhook-cluster-args-'));
chmodSync(scripts, 0o755);
cpSync(path.join(repo, 'test/cluster'), scripts, { recursive: true, filter: (src) => !src.includes(`${path.sep}cmd`) });
const env = { ...process.env, LEADERHOOK_CLUSTER_DIR: path.join(scripts, 'state'), LEADERHOOK_NETNS: 'lh-args-test' };
const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
after(() => rmSync(scripts, { recursive: true, force: true }));

function run(script: string, args: string[]): { status: number | null; stderr: string; stdout: string } {
  const result = spawnSync('bash', [path.join(scripts, script), ...args], { env, encoding: 'utf8', timeout: 20_000, ...asNobody });
  return { status: result.status, stderr: result.stderr, stdout: result.stdout };
}

for (const nodes of ['0', '9', 'three', '-1', '']) {
  test(`up.sh --nodes ${JSON.stringify(nodes)} is refused`, () => {
    const { status, stderr } = run('up.sh', ['--nodes', nodes]);
    assert.equal(status, 1);
    assert.match(stderr, /--nodes .*a number of nodes from 1 to 8|--nodes needs a number/);
  });
}

test('up.sh refuses an unknown argument and prints its usage', () => {
  const { status, stderr } = run('up.sh', ['--node', '3']);
  assert.equal(status, 1);
  assert.match(stderr, /unknown argument: --node/);
  assert.match(stderr, /--nodes N/);
});

test('clean.sh refuses any argument', () => {
  const { status, stderr } = run('clean.sh', ['--all']);
  assert.equal(status, 1);
  assert.match(stderr, /usage: clean\.sh \(no arguments; unknown: --all\)/);
});

test('build.sh refuses a version it does not know, naming the ones it does', () => {
  const { status, stderr } = run('build.sh', ['--version', '1.29']);
  assert.equal(status, 1);
  assert.match(stderr, /unsupported Kubernetes version '1\.29'/);
  assert.match(stderr, /1\.34 \(v1\.34\.4\)/);
});

test('build.sh --list names the default', () => {
  const result = run('build.sh', ['--list']);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^1\.34 v1\.34\.4 default$/m);
});
