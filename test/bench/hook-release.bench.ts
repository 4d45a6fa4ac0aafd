/**
 * R1's speed as the shipped process: SIGTERM to the own ConfigMap lock being
 * gone, over many trials, with the hook's own timing beside it.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node test/bench/hook-release.bench.ts \
 *     [--trials 50] [--node-flags="--lite-mode ..."]
 *
 * Each trial: a pod on a Node no kubelet serves, its lock and Lease, the
 * compiled hook started as that pod and idle for a second, the pod deleted
 * with a 30 s grace period, SIGTERM, and the lock polled every 2 ms. Refuses
 * to run outside the cluster's network namespace.
 */
import { parseArgs } from 'node:util';
import {
  configMapGone,
  createFakeNode,
  createLease,
  createLock,
  createNamespace,
  createPod,
  deleteNode,
  deletePod,
  sleep,
  waitFor,
} from '../integration/releaser/harness.ts';
import { startHookProcess } from '../integration/releaser/hook-process.ts';
import { compileLeaderhook } from '../support/compiled-leaderhook.ts';
import { connectTestCluster, refuseLeftovers } from '../support/kube.ts';
import { percentile } from './stats.ts';

connectTestCluster();
await refuseLeftovers('hook-release');

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '50' },
    'node-flags': { type: 'string', default: '' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write('usage: node test/bench/hook-release.bench.ts [--trials 50] [--node-flags="--lite-mode ..."]\n');
  process.exit(0);
}
const trials = Number(values.trials);
if (!Number.isInteger(trials) || trials < 1) throw new Error(`--trials must be a positive whole number, got ${values.trials}`);
const nodeFlags = values['node-flags'].split(/\s+/).filter(Boolean);
const cli = compileLeaderhook();

const node = await createFakeNode();
const ns = await createNamespace('lh-r1-bench');
const gone: number[] = [];
const own: number[] = [];
try {
  for (let i = 0; i < trials; i++) {
    const name = `op-${i}`;
    const pod = await createPod(ns.name, name, node);
    await createLock(ns.name, `${name}-lock`, { name, uid: pod.metadata?.uid as string });
    await createLease(ns.name, `${name}-lease`, `${name}_2a0c6a50-5b0e-4e43-a8b5-5d1f1b8e2c11`);
    const hook = startHookProcess(cli, ns, pod, nodeFlags);
    await hook.ready;
    await sleep(1_000);
    await deletePod(ns.name, name, 30);
    const t0 = performance.now();
    hook.process.kill('SIGTERM');
    await waitFor('lock gone', () => configMapGone(ns.name, `${name}-lock`), 5_000, 2);
    gone.push(performance.now() - t0);
    const code = await hook.exited;
    if (code !== 0) throw new Error(`trial ${i}: the hook exited ${code}`);
    const line = hook.lines.find((l) => /^SIGTERM: released/.test(l.msg));
    if (!line) throw new Error(`trial ${i}: no release line: ${JSON.stringify(hook.lines.slice(-3))}`);
    own.push(Number(line.durationMs));
  }
  const row = (label: string, xs: number[]) =>
    `| ${label} | ${xs.length} | ${percentile(xs, 50).toFixed(1)} | ${percentile(xs, 99).toFixed(1)} | ${Math.max(...xs).toFixed(1)} |`;
  process.stdout.write(
    `# R1 as a process: ${cli}${nodeFlags.length ? ` with ${nodeFlags.join(' ')}` : ''}, Node ${process.version}\n` +
      '| ms | trials | p50 | p99 | max |\n| --- | ---: | ---: | ---: | ---: |\n' +
      `${row('SIGTERM → lock gone (polled every 2 ms)', gone)}\n` +
      `${row("hook's own SIGTERM path (lock and Lease released, Events recorded)", own)}\n`,
  );
} finally {
  await ns.cleanup();
  await deleteNode(node);
}
