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
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: { ...process.env, LEADERHOOK_GRACE_PERIOD_FLOOR: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
