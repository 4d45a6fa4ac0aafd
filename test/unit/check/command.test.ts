/**
 * `leaderhook check` as a process, through the project's own API client and
 * a kubeconfig, against the in-memory cluster served on loopback HTTP: the
 * lines it prints, the summary and the exit code.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ReportDocument } from '../../../src/check/report.ts';
import { type CliExit, runCli } from '../../support/cli.ts';
import type { FakeApiServer } from '../../support/fake-api-server.ts';
import { serveHealthyCluster, writeKubeconfig } from './fake-api-server.ts';
import type { FakeCluster } from './fake-cluster.ts';

/** `leaderhook check ARGS…` with the developer's own $KUBECONFIG cleared. */
function check(...args: string[]): Promise<CliExit> {
  return runCli(['check', ...args], { env: { KUBECONFIG: '' } });
}

describe('leaderhook check, the command', () => {
  let dir: string;
  let cluster: FakeCluster;
  let server: FakeApiServer;
  let kubeconfig: string;
  before(async () => {
    ({ cluster, server } = await serveHealthyCluster());
    dir = await mkdtemp(path.join(tmpdir(), 'leaderhook-check-'));
    kubeconfig = path.join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, server);
  });
  after(async () => {
    server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('prints one ✓ line per check and the summary, and exits 0 on a healthy install', async () => {
    const r = await check('--kubeconfig', kubeconfig);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 10);
    assert.ok(
      lines.slice(0, -1).every((l) => l.startsWith('✓ ')),
      r.stdout,
    );
    assert.match(lines[0]!, /^✓ API server: http:\/\/127.0.0.1:\d+\/ \(kubeconfig .* context fake\): Kubernetes v1.34.4, as kubernetes-admin$/);
    assert.equal(lines.at(-1), 'all 9 checks passed');
  });

  it('--output json prints one document with every check and the summary, and exits as the text does', async () => {
    cluster.readyEndpoints = 0;
    try {
      const r = await check('--kubeconfig', kubeconfig, '--namespace', 'ops', '--output', 'json');
      assert.equal(r.status, 1, r.stderr);
      const report = JSON.parse(r.stdout) as ReportDocument;
      assert.equal(report.checks.length, 9);
      assert.deepEqual(Object.keys(report.checks[0]!), ['name', 'ok', 'detail', 'remedy']);
      const endpoints = report.checks.find((c) => c.name === 'webhook endpoints');
      assert.equal(endpoints?.ok, false);
      assert.match(endpoints?.remedy ?? '', /scale/);
      assert.ok(report.checks.filter((c) => c.ok).every((c) => c.remedy === null));
      assert.deepEqual(report.summary, { ok: false, total: 9, passed: 8, failed: 1, text: '1 of 9 checks failed' });
    } finally {
      cluster.readyEndpoints = 2;
    }
    const healthy = await check('--kubeconfig', kubeconfig, '-o', 'json');
    assert.equal(healthy.status, 0, healthy.stdout + healthy.stderr);
    assert.equal((JSON.parse(healthy.stdout) as ReportDocument).summary.ok, true);
  });

  it('refuses an unknown --output before it reads the cluster, with exit 2', async () => {
    const requestsBefore = server.requests.length;
    const r = await check('--kubeconfig', kubeconfig, '--output', 'yaml');
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^leaderhook check: --output: "yaml" is not one of text, json\n/);
    assert.equal(server.requests.length - requestsBefore, 0, 'no API request was made');
  });

  it('exits 1 when a check fails, naming it with its remedy', async () => {
    cluster.readyEndpoints = 0;
    try {
      const r = await check('--kubeconfig', kubeconfig, '--namespace', 'ops');
      assert.equal(r.status, 1);
      assert.match(r.stdout, /^✗ webhook endpoints: .* — fix: /m);
      assert.match(r.stdout, /^1 of 9 checks failed$/m);
    } finally {
      cluster.readyEndpoints = 2;
    }
  });

  it('exits 1 after one check when the API server cannot be reached, and 2 without any kubeconfig', async () => {
    const unreachable = path.join(dir, 'unreachable');
    await writeFile(
      unreachable,
      JSON.stringify({
        'current-context': 'c',
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        clusters: [{ name: 'c', cluster: { server: 'http://127.0.0.1:1' } }],
        users: [{ name: 'u', user: {} }],
      }),
    );
    const r = await check('--kubeconfig', unreachable);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /^✗ API server: http:\/\/127.0.0.1:1\/ .*ECONNREFUSED.* — fix: check --kubeconfig and --context/);
    assert.equal(r.stdout.trimEnd().split('\n')[1], '1 of 1 checks failed', 'nothing else is tried');
    const none = await check('--kubeconfig', path.join(dir, 'missing'));
    assert.equal(none.status, 2);
    assert.match(none.stderr, /--kubeconfig: no file .*missing/);
  });
});
