import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gitRevision, shortRevision } from '../../src/build-info.ts';
import { version } from '../../src/version.ts';
import { runCli } from '../support/cli.ts';

/** Settings a developer's shell may hold, cleared so that every test sees the defaults. */
const env = { LEADERHOOK_GRACE_PERIOD_FLOOR: '', LEADERHOOK_HOOK_IMAGE: '' };

// --dev writes its certificates to --certs-dir; point it away from the repository's certs/.
let certsDir: string;
before(async () => {
  certsDir = await mkdtemp(path.join(tmpdir(), 'leaderhook-cli-'));
});
after(async () => {
  await rm(certsDir, { recursive: true, force: true });
});

test('version prints the package version and, from a checkout, the commit git names; --version and --output json too', async () => {
  const revision = gitRevision(import.meta.dirname);
  assert.ok(revision, 'the tests run in a git checkout');
  const line = `leaderhook ${version} (commit ${shortRevision(revision)})\n`;
  for (const args of [['version'], ['--version']]) {
    const r = await runCli(args, { env });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, line);
  }
  const json = await runCli(['version', '-o', 'json'], { env });
  assert.equal(json.status, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), { version, commit: revision });
  const bad = await runCli(['version', '--output', 'xml'], { env });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--output: "xml" is not one of text, json/);
});

test('every command has --help that names its flags and their env variables', async () => {
  for (const [command, flag, variable] of [
    ['webhook', '--grace-period-floor', 'LEADERHOOK_GRACE_PERIOD_FLOOR'],
    ['release', '--margin', 'LEADERHOOK_MARGIN'],
    ['inject', '--grace-period-floor', 'LEADERHOOK_GRACE_PERIOD_FLOOR'],
    ['check', '--kubeconfig', 'KUBECONFIG'],
    ['version', '--output', 'LEADERHOOK_OUTPUT'],
  ] as const) {
    const r = await runCli([command, '--help'], { env });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.includes(flag) && r.stdout.includes(variable), r.stdout);
  }
});

test('a bad flag value exits 2 with a message that names the flag', async () => {
  const r = await runCli(['webhook', '--grace-period-floor=soon'], { env });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--grace-period-floor: "soon" is not a duration/);
});

test('a webhook without its serving certificate exits 1 with one line that names the file', async () => {
  const cert = path.join(certsDir, 'absent.crt');
  const r = await runCli(
    ['webhook', '--hook-image=leaderhook.test/leaderhook:dev', '--listen=127.0.0.1:0', `--tls-cert-file=${cert}`, `--tls-key-file=${cert}.key`],
    { env },
  );
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, `leaderhook webhook: reading serving certificate ${cert}: ENOENT\n`, 'one line, no stack trace');
});

test('failures leaderhook explains (a port in use, a bad setting) exit 1 with their one line, no stack trace', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'leaderhook-cli-failures-'));
  const occupied = createServer();
  await new Promise<void>((resolve) => occupied.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = occupied.address() as AddressInfo;
    const notADirectory = path.join(dir, 'file');
    await writeFile(notADirectory, '');
    const ftpKubeconfig = path.join(dir, 'kubeconfig');
    const ftpCluster = { name: 'c', cluster: { server: 'ftp://127.0.0.1:1' } };
    await writeFile(ftpKubeconfig, JSON.stringify({ 'current-context': 'c', contexts: [{ name: 'c', context: { cluster: 'c' } }], clusters: [ftpCluster] }));
    const webhook = ['webhook', '--hook-image=leaderhook.test/leaderhook:dev', '--dev'];
    for (const { args, env: settings, line } of [
      { args: [...webhook, `--certs-dir=${dir}/dev`, `--listen=127.0.0.1:${port}`], line: `leaderhook webhook: listening on 127.0.0.1:${port}: EADDRINUSE` },
      { args: [...webhook, `--certs-dir=${notADirectory}/dev`], line: /^leaderhook webhook: creating development certificates in .*\/file\/dev: ENOTDIR/ },
      {
        args: [...webhook, `--certs-dir=${dir}/dev`],
        env: { LEADERHOOK_LOG_LEVEL: 'chatty' },
        line: /^leaderhook webhook: log level "chatty" \(LEADERHOOK_LOG_LEVEL\) is not one of trace, debug, info, warn, error, fatal, silent$/,
      },
      {
        args: ['check', `--kubeconfig=${ftpKubeconfig}`],
        line: /^leaderhook check: API server ftp:\/\/127.0.0.1:1\/ .*: only https:\/\/ and http:\/\/ are supported$/,
      },
    ]) {
      const r = await runCli(args, { env: { ...env, ...settings } });
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.stderr.split('\n').length, 2, `one line, no stack trace:\n${r.stderr}`);
      if (typeof line === 'string') assert.equal(r.stderr, `${line}\n`);
      else assert.match(r.stderr.trimEnd(), line);
    }
  } finally {
    occupied.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('an unexpected error, a bug, exits 1 with its stack, so that it can be found', async () => {
  // Breaks stdout in the child before the CLI runs: `version` then fails inside the command as a bug would, with a TypeError.
  const breakStdout = "process.stdout.write = () => { throw new TypeError('stdout is broken for this test'); };";
  const r = await runCli(['version'], { env: { ...env, NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(breakStdout)}` } });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /^leaderhook version: TypeError: stdout is broken for this test\n\s+at /);
  assert.match(r.stderr, /src\/cli\.ts:\d+:\d+/, 'the stack names where it failed');
});

test('contradictory settings are refused before anything starts', async () => {
  const r = await runCli(['webhook', '--grace-period-floor=30s', '--grace-period-cap=10s', '--dev', '--listen=127.0.0.1:0', `--certs-dir=${certsDir}`], {
    env,
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--grace-period-cap \(10s\) is below --grace-period-floor \(30s\)/);
  assert.deepEqual(await readdir(certsDir), [], 'no development certificates were created');
});

test('an unknown command exits 2 and lists the commands', async () => {
  const r = await runCli(['frobnicate'], { env });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command "frobnicate"/);
  assert.match(r.stderr, /webhook/);
});

const operatorPod = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: op\nspec:\n  containers:\n  - name: op\n    image: example.com/op:1\n';

test('inject -f - reads stdin and writes the injected pod to stdout, its warnings to stderr', async () => {
  const r = await runCli(['inject', '-f', '-', '--hook-image=registry.example.com/leaderhook:1.0.0'], {
    env,
    stdin: operatorPod.replace('spec:\n', 'spec:\n  terminationGracePeriodSeconds: 1\n'),
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /name: leaderhook-release\n\s+image: registry.example.com\/leaderhook:1.0.0\n/);
  assert.match(r.stdout, /terminationGracePeriodSeconds: 10\n/, "the webhook's default floor");
  assert.match(r.stderr, /^Warning: document 1 \(Pod op\): terminationGracePeriodSeconds 1s -> 10s/);
});

test('inject refuses bad input with exit 1 and nothing on stdout, and a missing hook image with exit 2', async () => {
  const bad = await runCli(['inject', '-f', '-', '--hook-image=registry.example.com/leaderhook:1.0.0'], { env, stdin: `${operatorPod}---\nkind: [\n` });
  assert.equal(bad.status, 1);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^leaderhook inject: stdin: document 2 \(line \d+, column \d+\): not valid YAML/);

  const missing = await runCli(['inject', '-f', path.join(import.meta.dirname, 'no-such-file.yaml'), '--hook-image=registry.example.com/leaderhook:1.0.0'], {
    env,
  });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /no-such-file.yaml: cannot read it: ENOENT/);

  const noImage = await runCli(['inject', '-f', '-'], { env, stdin: operatorPod });
  assert.equal(noImage.status, 2);
  assert.equal(noImage.stdout, '');
  assert.match(noImage.stderr, /--hook-image is not set/);
});
