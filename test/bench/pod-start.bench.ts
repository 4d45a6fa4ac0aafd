/**
 * What the release hook adds to an operator pod's start, on the real kubelet:
 * for bare lfl-operator pods with and without the injected hook, the time
 * from the create call to the operator's first log line, and, for injected
 * pods, from the hook's first log line to the operator's.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node test/bench/pod-start.bench.ts \
 *     [--pods 20] [--hook-node-flags="--lite-mode ..."] [--json FILE]
 *
 * The pods are injected by the pure injector (src/injector) with the test
 * image, not through the webhook, so the figure is the kubelet's cost of the
 * hook alone (the webhook's own latency is measured by bench:webhook).
 * Plain and injected pods alternate, one at a time, in a namespace of their
 * own. Log times come from the container runtime (`kubectl logs
 * --timestamps`, nanoseconds). Refuses to run outside the cluster's network
 * namespace.
 *
 * It also reads the idle hook's private memory (RssAnon) in the first ten
 * injected pods, from /proc of the process containerd runs for it: the
 * shipped figure, in-cluster configuration and all.
 *
 * --json FILE also writes every sample there (test/matrix/compatibility.ts,
 * PodStartSamples), for `npm run test:matrix`.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodStartSamples } from '../matrix/compatibility.ts';
import { connectTestCluster, core, createTestNamespace, refuseLeftovers } from '../support/kube.ts';
import { grantReleaseHook, injectedWithTestImage } from '../support/leaderhook.ts';
import { applyOperatorRbac, operatorManifest } from '../support/operators.ts';
import { memoryOf } from '../support/process-stats.ts';
import { waitFor } from '../support/wait.ts';
import { containerPid } from './container-cgroup.ts';
import { percentile } from './stats.ts';

connectTestCluster();
await refuseLeftovers('pod-start');

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '20' },
    'hook-node-flags': { type: 'string', default: '' },
    json: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write('usage: node test/bench/pod-start.bench.ts [--pods 20] [--hook-node-flags="--lite-mode ..."] [--json FILE]\n');
  process.exit(0);
}
const pods = Number(values.pods);
if (!Number.isInteger(pods) || pods < 1) throw new Error(`--pods must be a positive whole number, got ${values.pods}`);
const hookNodeFlags = values['hook-node-flags'].split(/\s+/).filter(Boolean);

function operatorPod(name: string, injected: boolean): V1Pod {
  const { metadata, spec } = operatorManifest('lfl-operator', {}).spec.template;
  const pod: V1Pod = { metadata: { ...metadata, name }, spec: { ...spec!, restartPolicy: 'Never' } };
  if (!injected) return pod;
  const withHook = injectedWithTestImage(pod);
  const hook = withHook.spec?.initContainers?.at(-1);
  if (hook && hookNodeFlags.length > 0) hook.command = ['node', ...hookNodeFlags, '/app/dist/cli.js'];
  return withHook;
}

/** The runtime's timestamp of a container's first log line, in ms since the epoch (ns precision kept to µs). */
async function firstLogAt(namespace: string, name: string, container: string): Promise<number> {
  return waitFor(
    `first log line of ${name}/${container}`,
    async () => {
      const text = await core.readNamespacedPodLog({ name, namespace, container, timestamps: true });
      const stamp = text.split('\n', 1)[0]?.split(' ', 1)[0];
      if (!stamp) return undefined;
      const [whole, fraction = '0'] = stamp.replace(/Z$/, '').split('.');
      return Date.parse(`${whole}Z`) + Number(`0.${fraction}`) * 1000;
    },
    60_000,
    50,
  );
}

const ns = await createTestNamespace('bench-start', { 'pod-security.kubernetes.io/enforce': 'restricted' });
try {
  await applyOperatorRbac(ns.name);
  await grantReleaseHook(ns.name, 'test-operator');
  const plain: number[] = [];
  const injected: number[] = [];
  const hookToOperator: number[] = [];
  const hookRss: number[] = [];
  for (let i = 0; i < pods * 2; i++) {
    const withHook = i % 2 === 1;
    const name = `start-${withHook ? 'hook' : 'plain'}-${i}`;
    const created = Date.now();
    await core.createNamespacedPod({ namespace: ns.name, body: operatorPod(name, withHook) });
    const operatorAt = await firstLogAt(ns.name, name, 'operator');
    (withHook ? injected : plain).push(operatorAt - created);
    if (withHook) hookToOperator.push(operatorAt - (await firstLogAt(ns.name, name, 'leaderhook-release')));
    if (withHook && hookRss.length < 10) {
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const live = await core.readNamespacedPod({ name, namespace: ns.name });
      const hook = live.status?.initContainerStatuses?.find((c) => c.name === 'leaderhook-release');
      hookRss.push(memoryOf(containerPid(hook?.containerID ?? '', live.spec?.nodeName)).anonKiB / 1024);
    }
    await core.deleteNamespacedPod({ name, namespace: ns.name, gracePeriodSeconds: 0 });
  }
  const row = (label: string, xs: number[]) =>
    `| ${label} | ${xs.length} | ${percentile(xs, 50).toFixed(0)} | ${percentile(xs, 90).toFixed(0)} | ${Math.max(...xs).toFixed(0)} |`;
  process.stdout.write(
    `# pod start on the local kubelet, ${pods} pods each${hookNodeFlags.length ? `, hook command node ${hookNodeFlags.join(' ')}` : ''}\n` +
      '| ms | pods | p50 | p90 | max |\n| --- | ---: | ---: | ---: | ---: |\n' +
      `${row('create → operator first log, plain', plain)}\n` +
      `${row('create → operator first log, injected', injected)}\n` +
      `${row('hook first log → operator first log', hookToOperator)}\n` +
      `| added by the hook (p50 / p90) | | ${(percentile(injected, 50) - percentile(plain, 50)).toFixed(0)} | ${(percentile(injected, 90) - percentile(plain, 90)).toFixed(0)} | |\n` +
      `# idle hook in its pod, RssAnon MiB over ${hookRss.length} pods: p50 ${percentile(hookRss, 50).toFixed(1)}, max ${Math.max(...hookRss).toFixed(1)}\n`,
  );
  if (values.json) {
    const samples: PodStartSamples = { pods, plainMs: plain, injectedMs: injected, hookToOperatorMs: hookToOperator, hookRssMiB: hookRss };
    writeFileSync(values.json, `${JSON.stringify(samples)}\n`);
  }
} finally {
  await ns.cleanup();
}
