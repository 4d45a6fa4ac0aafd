import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

const cli = path.join(import.meta.dirname, '../../src/cli.ts');
/** Every command here exits at once; one still running this long is a regression (a server that started), not a slow machine. */
const EXIT_TIMEOUT_MS = 20_000;

interface Exit {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; when it has not exited within EXIT_TIMEOUT_MS, kills it by its PID and rejects. */
function run(...args: string[]): Promise<Exit> {
  return runWithInput(undefined, ...args);
}

/** Runs the CLI with `input` on its stdin (at its end at once when undefined). */
function runWithInput(input: string | undefined, ...args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: { ...process.env, LEADERHOOK_GRACE_PERIOD_FLOOR: '', LEADERHOOK_HOOK_IMAGE: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          // It exited in the meantime.
        }
      }
      reject(
        new Error(`leaderhook ${args.join(' ')} did not exit within ${EXIT_TIMEOUT_MS} ms; killed PID ${child.pid}\nstdout:\n${stdout}\nstderr:\n${stderr}`),
      );
    }, EXIT_TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

// --dev writes its certificates to --certs-dir; point it away from the repository's certs/.
let certsDir: string;
before(async () => {
  certsDir = await mkdtemp(path.join(tmpdir(), 'leaderhook-cli-'));
});
after(async () => {
  await rm(certsDir, { recursive: true, force: true });
});

test('version prints the package version', async () => {
  const r = await run('version');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^leaderhook \d+\.\d+\.\d+/);
});

test('every command has --help that names its flags and their env variables', async () => {
  for (const [command, flag, env] of [
    ['webhook', '--grace-period-floor', 'LEADERHOOK_GRACE_PERIOD_FLOOR'],
    ['release', '--margin', 'LEADERHOOK_MARGIN'],
    ['inject', '--grace-period-floor', 'LEADERHOOK_GRACE_PERIOD_FLOOR'],
    ['check', '--kubeconfig', 'KUBECONFIG'],
  ] as const) {
    const r = await run(command, '--help');
    assert.equal(r.status, 0, r.stderr);
    assert.ok(r.stdout.includes(flag) && r.stdout.includes(env), r.stdout);
  }
});

test('a bad flag value exits 2 with a message that names the flag', async () => {
  const r = await run('webhook', '--grace-period-floor=soon');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--grace-period-floor: "soon" is not a duration/);
});

test('a webhook without its serving certificate exits 1 with one line that names the file', async () => {
  const cert = path.join(certsDir, 'absent.crt');
  const r = await run(
    'webhook',
    '--hook-image=leaderhook.test/leaderhook:dev',
    '--listen=127.0.0.1:0',
    `--tls-cert-file=${cert}`,
    `--tls-key-file=${cert}.key`,
  );
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, `leaderhook webhook: reading serving certificate ${cert}: ENOENT\n`, 'one line, no stack trace');
});

test('contradictory settings are refused before anything starts', async () => {
  const r = await run('webhook', '--grace-period-floor=30s', '--grace-period-cap=10s', '--dev', '--listen=127.0.0.1:0', `--certs-dir=${certsDir}`);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--grace-period-cap \(10s\) is below --grace-period-floor \(30s\)/);
  assert.deepEqual(await readdir(certsDir), [], 'no development certificates were created');
});

test('an unknown command exits 2 and lists the commands', async () => {
  const r = await run('frobnicate');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command "frobnicate"/);
  assert.match(r.stderr, /webhook/);
});

const operatorPod = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: op\nspec:\n  containers:\n  - name: op\n    image: example.com/op:1\n';

test('inject -f - reads stdin and writes the injected pod to stdout, its warnings to stderr', async () => {
  const r = await runWithInput(
    operatorPod.replace('spec:\n', 'spec:\n  terminationGracePeriodSeconds: 1\n'),
    'inject',
    '-f',
    '-',
    '--hook-image=registry.example.com/leaderhook:1.0.0',
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /name: leaderhook-release\n\s+image: registry.example.com\/leaderhook:1.0.0\n/);
  assert.match(r.stdout, /terminationGracePeriodSeconds: 10\n/, "the webhook's default floor");
  assert.match(r.stderr, /^Warning: document 1 \(Pod op\): terminationGracePeriodSeconds 1s -> 10s/);
});

test('inject refuses bad input with exit 1 and nothing on stdout, and a missing hook image with exit 2', async () => {
  const bad = await runWithInput(`${operatorPod}---\nkind: [\n`, 'inject', '-f', '-', '--hook-image=registry.example.com/leaderhook:1.0.0');
  assert.equal(bad.status, 1);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^leaderhook inject: stdin: document 2 \(line \d+, column \d+\): not valid YAML/);

  const missing = await run('inject', '-f', path.join(import.meta.dirname, 'no-such-file.yaml'), '--hook-image=registry.example.com/leaderhook:1.0.0');
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /no-such-file.yaml: cannot read it: ENOENT/);

  const noImage = await runWithInput(operatorPod, 'inject', '-f', '-');
  assert.equal(noImage.status, 2);
  assert.equal(noImage.stdout, '');
  assert.match(noImage.stderr, /--hook-image is not set/);
});
