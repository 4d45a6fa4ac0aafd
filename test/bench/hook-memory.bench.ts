/**
 * The release hook's footprint against the size of its namespace: private
 * memory (RssAnon) when idle, time from process start to `ready`, and the
 * bytes the API server sent it on the way, for namespaces holding N
 * ConfigMaps of K KiB each (plus a few locks of another pod and its own).
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node test/bench/hook-memory.bench.ts \
 *     [--sizes 0,500,2000] [--kib 100] [--repeat 1] [--node-flags="--lite-mode ..."] [--cli path/to/dist/cli.js]
 *
 * Runs the compiled hook (src/ compiled as the image does, or --cli to
 * measure another build, e.g. an older commit's) as a process of its own
 * against the local cluster. It refuses to run outside the cluster's network
 * namespace, and prints one table row per namespace size.
 */
import { parseArgs } from 'node:util';
import { admin, createFakeNode, createLock, createNamespace, createPod, deleteNode, sleep, type TestNamespace } from '../integration/releaser/harness.ts';
import { startHookProcess } from '../integration/releaser/hook-process.ts';
import { compileLeaderhook } from '../support/compiled-leaderhook.ts';
import { connectTestCluster, refuseLeftovers } from '../support/kube.ts';
import { memoryOf } from '../support/process-stats.ts';
import { median } from './stats.ts';

connectTestCluster();
await refuseLeftovers('hook-memory');

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '0,500,2000' },
    kib: { type: 'string', default: '100' },
    repeat: { type: 'string', default: '1' },
    'node-flags': { type: 'string', default: '' },
    cli: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write('usage: node test/bench/hook-memory.bench.ts [--sizes 0,500,2000] [--kib 100] [--repeat 1] [--node-flags="..."] [--cli dist/cli.js]\n');
  process.exit(0);
}
const sizes = values.sizes.split(',').map((s) => Number(s.trim()));
const kib = Number(values.kib);
const repeat = Number(values.repeat);
if (sizes.some((n) => !Number.isInteger(n) || n < 0) || !(kib > 0) || !(repeat >= 1)) {
  throw new Error(`--sizes must be whole numbers, --kib and --repeat positive: got ${values.sizes}, ${values.kib}, ${values.repeat}`);
}
const nodeFlags = values['node-flags'].split(/\s+/).filter(Boolean);
const cli = values.cli ?? compileLeaderhook();

/** Fills `ns` with `count` ConfigMaps of `kib` KiB of data, 16 requests at a time. */
async function fill(ns: string, count: number): Promise<void> {
  const kube = await admin();
  const blob = 'x'.repeat(kib * 1024);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      await kube.request({
        method: 'POST',
        path: `/api/v1/namespaces/${ns}/configmaps`,
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `data-${i}` }, data: { blob } },
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

interface Row {
  size: number;
  rssMiB: number;
  readyMs: number;
  apiKiB: number;
}

async function measure(node: string, size: number): Promise<Row> {
  const ns: TestNamespace = await createNamespace('lh-mem');
  try {
    await fill(ns.name, size);
    const other = await createPod(ns.name, 'other-0', node);
    for (const name of ['other-lock-a', 'other-lock-b', 'other-lock-c'])
      await createLock(ns.name, name, { name: 'other-0', uid: other.metadata?.uid as string });
    const pod = await createPod(ns.name, 'op-0', node);
    await createLock(ns.name, 'op-lock', { name: 'op-0', uid: pod.metadata?.uid as string });
    const hook = startHookProcess(cli, ns, pod, nodeFlags);
    try {
      const ready = await hook.ready;
      const readyMs = await hook.readyAfterMs;
      await sleep(3_000);
      const rss = memoryOf(hook.process.pid as number).anonKiB;
      return { size, rssMiB: rss / 1024, readyMs, apiKiB: Number(ready.apiBytesReceived ?? Number.NaN) / 1024 };
    } finally {
      hook.process.kill('SIGKILL');
      await hook.exited;
    }
  } finally {
    await ns.cleanup();
  }
}

const node = await createFakeNode();
try {
  process.stdout.write(
    `# release hook footprint: ${cli}${nodeFlags.length ? ` with ${nodeFlags.join(' ')}` : ''}, Node ${process.version}, ConfigMaps of ${kib} KiB, median of ${repeat}\n`,
  );
  process.stdout.write('| ConfigMaps | RssAnon idle (MiB) | start to ready (ms) | API bytes at start (KiB) |\n| ---: | ---: | ---: | ---: |\n');
  for (const size of sizes) {
    const rows: Row[] = [];
    for (let i = 0; i < repeat; i++) rows.push(await measure(node, size));
    const row = (pick: (r: Row) => number, digits: number) => median(rows.map(pick)).toFixed(digits);
    process.stdout.write(`| ${size} | ${row((r) => r.rssMiB, 1)} | ${row((r) => r.readyMs, 0)} | ${row((r) => r.apiKiB, 1)} |\n`);
  }
} finally {
  await deleteNode(node);
}
