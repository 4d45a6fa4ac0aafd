/**
 * `npm run demo` as a user runs it — the command, not the scenario's code
 * (test/e2e/demo.test.ts runs that): warm, as a child process with a
 * timeout, from outside the cluster's network namespace like a user's shell.
 * It must exit 0 by itself and print the report and its closing lines; a
 * process it leaves behind that keeps its event loop alive (as cert-manager
 * started by the demo once did) makes it time out here.
 *
 *   node_modules/.bin/node --test test/demo/npm-run-demo.test.ts   (after npm run cluster:up)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const repo = path.join(import.meta.dirname, '../..');
/** Warm, the demo takes one to two minutes here; a demo still running after this does not return. */
const TIMEOUT_MS = 8 * 60_000;

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

/** Runs `npm run demo` in its own process group, which a timeout kills whole (by the group leader's PID). */
function runDemo(): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '-s', 'demo'], { cwd: repo, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, TIMEOUT_MS);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`starting npm run demo: ${error.message}`, { cause: error }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, timedOut });
    });
  });
}

test('npm run demo exits 0 by itself, after the report and its closing lines', { timeout: TIMEOUT_MS + 30_000 }, async (t) => {
  const started = Date.now();
  const run = await runDemo();
  t.diagnostic(`npm run demo took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  assert.equal(run.timedOut, false, `npm run demo was still running after ${TIMEOUT_MS / 1000} s; its output:\n${run.output}`);
  assert.equal(run.code, 0, `npm run demo exited ${run.code ?? run.signal}; its output:\n${run.output}`);
  for (const operator of ['lease-operator', 'lfl-operator']) assert.match(run.output, new RegExp(`^${operator}: `, 'm'), `the report has ${operator}'s table`);
  assert.match(run.output, /^ {2}freed by +release hook, rule R1/m, 'the report says the hook freed a lock by R1');
  assert.match(run.output, /^done in [\d.]+ (s|min)\. The cluster keeps running; look around:$/m);
  assert.match(run.output, /^run it again: npm run demo {4}tear down: npm run cluster:down$/m);
});
