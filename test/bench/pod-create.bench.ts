/**
 * What the webhook adds to a pod create through the real API server: the
 * latency of `POST /api/v1/namespaces/N/pods`, as a client sees it, in a
 * namespace leaderhook injects and in one it does not look at, alternating
 * one create at a time so that whatever else the machine does hits both.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node test/bench/pod-create.bench.ts \
 *     [--creates 500] [--warmup 50]
 *
 * deploy/ is installed as the e2e tests install it (2 webhook replicas behind
 * the Service, the image's own log level). The pod is the kubebuilder pod of
 * test/testdata/admission (its ReplicaSet owner removed). Every pod carries a
 * scheduling gate, so none is ever scheduled or started: the figure is the
 * admission path alone, API server → Service → webhook → etcd, not the kubelet.
 * Refuses to run outside the cluster's network namespace (test/support/kube.ts).
 */
import { parseArgs } from 'node:util';
import { connectTestCluster, core, createTestNamespace, refuseLeftovers } from '../support/kube.ts';
import { INJECTION_LABEL, installLeaderhook } from '../support/leaderhook.ts';
import { gatedKubebuilderPod, isInjected, KUBEBUILDER_SERVICE_ACCOUNT } from '../support/pod-create-load.ts';
import { percentile } from './stats.ts';

connectTestCluster();
await refuseLeftovers('pod-create');

const usage = 'usage: test/cluster/in-netns.sh node_modules/.bin/node test/bench/pod-create.bench.ts [--creates 500] [--warmup 50]\n';
const { values } = parseArgs({
  options: {
    creates: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const creates = Number(values.creates);
const warmup = Number(values.warmup);
if (!Number.isInteger(creates) || creates < 1) throw new Error(`--creates must be a positive whole number, got ${values.creates}`);
if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`--warmup must be a whole number, got ${values.warmup}`);

interface Sample {
  ms: number;
  injected: boolean;
}

async function createOnce(namespace: string): Promise<Sample> {
  const started = process.hrtime.bigint();
  const pod = await core.createNamespacedPod({ namespace, body: gatedKubebuilderPod('create-bench-') });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { ms, injected: isInjected(pod) };
}

function summary(label: string, samples: readonly number[]): string {
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  const cells = [50, 90, 99].map((p) => percentile(samples, p).toFixed(2));
  return `| ${label} | ${samples.length} | ${cells.join(' | ')} | ${Math.max(...samples).toFixed(2)} | ${mean.toFixed(2)} |`;
}

const started = Date.now();
const uninstall = await installLeaderhook({ debugLog: false });
const injecting = await createTestNamespace('create-bench-on', INJECTION_LABEL);
const plain = await createTestNamespace('create-bench-off');
// The pod runs as the kubebuilder operator's ServiceAccount; admission refuses it where that is missing.
for (const ns of [injecting, plain]) {
  await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: KUBEBUILDER_SERVICE_ACCOUNT } } });
}
const withWebhook: number[] = [];
const withoutWebhook: number[] = [];
try {
  for (let i = 0; i < warmup + creates; i++) {
    // Alternate which goes first so neither side always follows the other's etcd write.
    const order = i % 2 === 0 ? [injecting, plain] : [plain, injecting];
    for (const ns of order) {
      const sample = await createOnce(ns.name);
      const expectInjected = ns === injecting;
      if (sample.injected !== expectInjected) {
        throw new Error(`pod in ${ns.name} came back ${sample.injected ? 'injected' : 'not injected'}; the comparison would mean nothing`);
      }
      if (i >= warmup) (expectInjected ? withWebhook : withoutWebhook).push(sample.ms);
    }
  }
  const p99Delta = percentile(withWebhook, 99) - percentile(withoutWebhook, 99);
  const p50Delta = percentile(withWebhook, 50) - percentile(withoutWebhook, 50);
  process.stdout.write(
    [
      `pod create through the API server, ${creates} each after ${warmup} warm-up, alternating, one at a time (${((Date.now() - started) / 1000).toFixed(0)} s in all)`,
      '',
      '| namespace | creates | p50 ms | p90 ms | p99 ms | max ms | mean ms |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      summary('opted in (webhook called)', withWebhook),
      summary('not opted in', withoutWebhook),
      '',
      `webhook adds: p50 ${p50Delta.toFixed(2)} ms, p99 ${p99Delta.toFixed(2)} ms`,
      '',
    ].join('\n'),
  );
} finally {
  await injecting.cleanup();
  await plain.cleanup();
  await uninstall();
}
