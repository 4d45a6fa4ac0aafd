/**
 * The hook as a process, as it runs in a pod: compiled JavaScript (what the
 * image ships; running the .ts sources costs ~25 MiB more for type
 * stripping) with the downward-API env, authenticated as the pod's service
 * account. It measures the private memory of the idle hook and the latency
 * from SIGTERM to the lock being gone, and checks the exit code is 0.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileLeaderhook } from '../../support/compiled-leaderhook.ts';
import { connectTestCluster } from '../../support/kube.ts';
import { memoryOf } from '../../support/process-stats.ts';
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
  skipReason,
  sleep,
  type TestNamespace,
  waitFor,
} from './harness.ts';
import { type HookProcess, startHookProcess } from './hook-process.ts';

connectTestCluster();

describe('release hook process', { skip: skipReason }, () => {
  let node: string;
  let ns: TestNamespace;
  let child: HookProcess | undefined;

  before(async () => {
    node = await createFakeNode();
    ns = await createNamespace('lh-proc');
  });
  after(async () => {
    if (child && child.process.exitCode === null) child.process.kill('SIGKILL');
    await ns?.cleanup();
    await deleteNode(node);
  });

  it('idles small, then on SIGTERM frees the lock and the Lease and exits 0', async () => {
    const pod = await createPod(ns.name, 'op-0', node);
    const uid = pod.metadata?.uid as string;
    await createLock(ns.name, 'op-lock', { name: 'op-0', uid });
    await createLease(ns.name, 'op-lease', 'op-0_2a0c6a50-5b0e-4e43-a8b5-5d1f1b8e2c11');
    child = startHookProcess(compileLeaderhook(), ns, pod);
    const exited = child.exited;
    const ready = await child.ready;
    assert.deepEqual(ready.ownLocks, ['op-lock']);
    assert.deepEqual(ready.ownLeases, ['op-lease']);
    await sleep(2_000);
    const pid = child.process.pid as number;
    const rss = memoryOf(pid).anonKiB;
    process.stdout.write(`# idle release hook (Node ${process.version}): RssAnon ${(rss / 1024).toFixed(1)} MiB\n`);
    assert.ok(rss < 32 * 1024, `RssAnon ${rss} KiB stays well below client-node's 57-78 MiB`);

    await deletePod(ns.name, 'op-0', 30);
    const t0 = performance.now();
    child.process.kill('SIGTERM');
    await waitFor('lock gone', () => configMapGone(ns.name, 'op-lock'), 5_000, 5);
    const lockGoneMs = performance.now() - t0;
    const code = await exited;
    const exitMs = performance.now() - t0;
    const lease = await (await admin()).getLease(ns.name, 'op-lease');
    assert.equal(code, 0);
    assert.equal(lease.spec?.holderIdentity ?? '', '');
    const done = child.lines.find((l) => /^SIGTERM: released/.test(l.msg));
    assert.ok(done, 'one log line for the release');
    process.stdout.write(
      `# R1 as a process: SIGTERM -> lock gone ${lockGoneMs.toFixed(1)} ms (polled every 5 ms), process exited 0 after ${exitMs.toFixed(1)} ms; hook's own timing ${done.durationMs} ms\n`,
    );
  });
});
