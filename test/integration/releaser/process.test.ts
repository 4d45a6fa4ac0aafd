/**
 * The hook as a process, as it runs in a pod: compiled JavaScript (what the
 * image ships; running the .ts sources costs ~25 MiB more for type
 * stripping) with the downward-API env, authenticated as the pod's service
 * account. It measures the private memory of the idle hook and the latency
 * from SIGTERM to the lock being gone, and checks the exit code is 0.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  admin,
  configMapGone,
  createFakeNode,
  createLease,
  createLock,
  createNamespace,
  createPod,
  deleteNode,
  deletePod,
  type LogLine,
  skipReason,
  sleep,
  type TestNamespace,
  waitFor,
} from './harness.ts';

const repo = fileURLToPath(new URL('../../../', import.meta.url));

/** Compiles src/ as the image build does, into a scratch directory that resolves the repo's node_modules; returns the CLI. */
function compile(): string {
  const out = mkdtempSync(join(tmpdir(), 'leaderhook-dist-'));
  let diagnostics = '';
  try {
    execFileSync(join(repo, 'node_modules/.bin/tsc'), ['-p', join(repo, 'tsconfig.build.json'), '--outDir', join(out, 'dist')], { encoding: 'utf8' });
  } catch (err) {
    // tsc exits non-zero on a type error anywhere in src/ but still emits
    diagnostics = String((err as { stdout?: string }).stdout ?? err);
  }
  const main = join(out, 'dist/cli.js');
  if (!existsSync(main)) throw new Error(`compiling src/ to ${out} produced no ${main}: ${diagnostics}`);
  symlinkSync(join(repo, 'node_modules'), join(out, 'node_modules'));
  copyFileSync(join(repo, 'package.json'), join(out, 'package.json'));
  return main;
}

function rssAnonKiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('RssAnon:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1]);
}

describe('release hook process', { skip: skipReason }, () => {
  let node: string;
  let ns: TestNamespace;
  let child: ChildProcess | undefined;
  const lines: LogLine[] = [];

  before(async () => {
    node = await createFakeNode();
    ns = await createNamespace('lh-proc');
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await ns?.cleanup();
    await deleteNode(node);
    (await admin()).close();
  });

  it('idles small, then on SIGTERM frees the lock and the Lease and exits 0', async () => {
    const pod = await createPod(ns.name, 'op-0', node);
    const uid = pod.metadata?.uid as string;
    await createLock(ns.name, 'op-lock', { name: 'op-0', uid });
    await createLease(ns.name, 'op-lease', 'op-0_2a0c6a50-5b0e-4e43-a8b5-5d1f1b8e2c11');
    const mainPath = compile();
    child = spawn(process.execPath, [mainPath, 'release'], {
      env: {
        PATH: process.env.PATH,
        POD_NAME: 'op-0',
        POD_NAMESPACE: ns.name,
        POD_UID: uid,
        LEADERHOOK_KUBECONFIG: ns.kubeconfig,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buffer = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          lines.push(JSON.parse(line) as LogLine);
        } catch {
          lines.push({ level: 'raw', msg: line });
        }
        if (process.env.LEADERHOOK_TEST_VERBOSE) process.stderr.write(`${line}\n`);
      }
    });
    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    const ready = await waitFor('hook ready', async () => lines.find((l) => /^ready/.test(l.msg)), 20_000);
    assert.deepEqual(ready.ownLocks, ['op-lock']);
    assert.deepEqual(ready.ownLeases, ['op-lease']);
    await sleep(2_000);
    const pid = child.pid as number;
    const rss = rssAnonKiB(pid);
    process.stdout.write(`# idle release hook (Node ${process.version}): RssAnon ${(rss / 1024).toFixed(1)} MiB\n`);
    assert.ok(rss < 32 * 1024, `RssAnon ${rss} KiB stays well below client-node's 57-78 MiB`);

    await deletePod(ns.name, 'op-0', 30);
    const t0 = performance.now();
    child.kill('SIGTERM');
    await waitFor('lock gone', () => configMapGone(ns.name, 'op-lock'), 5_000, 5);
    const lockGoneMs = performance.now() - t0;
    const code = await exited;
    const exitMs = performance.now() - t0;
    const lease = await (await admin()).getLease(ns.name, 'op-lease');
    assert.equal(code, 0);
    assert.equal(lease.spec?.holderIdentity ?? '', '');
    const done = lines.find((l) => /^SIGTERM: released/.test(l.msg));
    assert.ok(done, 'one log line for the release');
    process.stdout.write(
      `# R1 as a process: SIGTERM -> lock gone ${lockGoneMs.toFixed(1)} ms (polled every 5 ms), process exited 0 after ${exitMs.toFixed(1)} ms; hook's own timing ${done.durationMs} ms\n`,
    );
  });
});
