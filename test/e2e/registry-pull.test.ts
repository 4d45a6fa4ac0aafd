/**
 * leaderhook pulled from a registry, as a user's cluster gets it: a release
 * folder published with scripts/publish.sh into the local cluster's registry
 * (test/cluster/up.sh runs it, TLS from the cluster CA, which the node's
 * containerd trusts through its hosts.toml), then
 * - deploy/ with an overlay whose `images:` names the registry, pull policy
 *   IfNotPresent as shipped: the webhook's pods pull the image, and so does
 *   the hook injected into an operator pod on a node that lacks it;
 * - a hook tag the registry does not have: the operator pod sits in
 *   Init:ErrImagePull / Init:ImagePullBackOff and `leaderhook check` names it;
 * - the registry down: a hook image the node lacks cannot be pulled, the pod
 *   backs off, check names it; with the registry back the pod starts;
 * - `helm install` of the chart from oci://REGISTRY/charts.
 * Every version is fresh per run, so no image is on the node before its pull.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/registry-pull.test.ts
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { HOOK_CONTAINER_NAME } from '../../src/injector/index.ts';
import { runCli } from '../support/cli.ts';
import { createOperator } from '../support/operators.ts';
import { admissionRegistration, apps, connectTestCluster, core, createTestNamespace, kubeconfigPath, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { createOperatorNamespace, deleteNamespaceAndWait, INJECTION_LABEL, installLeaderhook, kubectl, leaderhookImage } from '../support/leaderhook.ts';
import {
  makeReleaseDir,
  nodeImages,
  podEvents,
  publish,
  pullOutcomes,
  type ReleaseDir,
  registryCa,
  registryHost,
  registryMissing,
  registryPid,
  removeRepositoryFromNode,
  retag,
  startRegistry,
  stopRegistry,
} from '../support/registry.ts';
import { helm } from '../support/tools.ts';

connectTestCluster();

const SYSTEM = 'leaderhook-system';
const HOOK_FIELD = `spec.initContainers{${HOOK_CONTAINER_NAME}}`;
const PULL_TIMEOUT_MS = 180_000;
/** The kubelet's reasons for a container that waits on its image. */
const PULL_FAILURES = ['ErrImagePull', 'ImagePullBackOff'];

const version = `0.1.0-pull.${randomBytes(3).toString('hex')}`;
const image = `${registryHost}/leaderhook:${version}`;

async function check(namespace: string): Promise<{ status: number | null; lines: string[]; output: string }> {
  const { status, stdout, stderr } = await runCli(['check', '--kubeconfig', kubeconfigPath, '--namespace', namespace], { timeoutMs: 60_000 });
  return { status, lines: stdout.trimEnd().split('\n'), output: `${stdout}${stderr}` };
}

/** The injectable pods of `namespace` that are not being deleted. */
async function livePods(namespace: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace })).items.filter((p) => !p.metadata?.deletionTimestamp);
}

function hookWaiting(pod: V1Pod): { reason?: string; message?: string } | undefined {
  return pod.status?.initContainerStatuses?.find((s) => s.name === HOOK_CONTAINER_NAME)?.state?.waiting;
}

/** Sets the hook image the webhook injects (a user's mistake, or a rollout of another tag) and waits until every webhook answer carries it. */
async function setHookImage(hookImage: string, probe: string): Promise<void> {
  kubectl(['-n', SYSTEM, 'set', 'env', 'deployment/leaderhook-webhook', `LEADERHOOK_HOOK_IMAGE=${hookImage}`]);
  kubectl(['-n', SYSTEM, 'rollout', 'status', 'deployment/leaderhook-webhook', '--timeout=180s']);
  // Until the old pods have left the Service's endpoints, one of them may still answer: three answers in a row.
  let inARow = 0;
  await waitFor(
    `the webhook to inject hook image ${hookImage}`,
    async () => {
      const pod = await core.createNamespacedPod({
        namespace: probe,
        dryRun: 'All',
        body: { metadata: { name: 'probe' }, spec: { containers: [{ name: 'c', image: leaderhookImage }] } },
      });
      const hook = pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME);
      inARow = hook?.image === hookImage ? inARow + 1 : 0;
      return inARow >= 3;
    },
    60_000,
    300,
  );
}

/** An opted-in namespace with one lfl-operator Deployment (test/operators); its pods are injected. */
async function operatorNamespace(prefix: string, replicas = 2): Promise<TestNamespace> {
  const ns = await createOperatorNamespace(prefix, INJECTION_LABEL);
  await createOperator(ns.name, 'lfl-operator', { shape: 'deployment', withoutPodNameEnv: true });
  if (replicas !== 2) kubectl(['-n', ns.name, 'scale', 'deployment/lfl-operator', `--replicas=${replicas}`]);
  return ns;
}

/** Waits until a pod of `namespace` has its hook waiting on its image for one of `reasons`; returns it. */
async function podStuckOnHookImage(namespace: string, reasons: string[]): Promise<V1Pod> {
  return waitFor(
    `a pod of ${namespace} with its hook in ${reasons.join(' or ')}`,
    async () => (await livePods(namespace)).find((p) => reasons.includes(hookWaiting(p)?.reason ?? '')),
    PULL_TIMEOUT_MS,
    500,
  );
}

describe('leaderhook pulled from the cluster registry', { skip: registryMissing() }, () => {
  let release: ReleaseDir | undefined;
  let uninstall: (() => Promise<void>) | undefined;
  let probe: TestNamespace | undefined;
  const namespaces: TestNamespace[] = [];

  before(async () => {
    assert.ok(nodeImages().includes(leaderhookImage), `${leaderhookImage} is on the node: run scripts/build-local-image.sh first`);
    release = makeReleaseDir(version, leaderhookImage);
    probe = await createTestNamespace('registry-probe', INJECTION_LABEL);
  });

  after(async () => {
    // A test that failed half way may have left the registry stopped; the next ones need it.
    if (registryPid() === undefined) startRegistry();
    for (const ns of namespaces) await ns.cleanup();
    await probe?.cleanup();
    try {
      helm(['uninstall', 'leaderhook', '--kubeconfig', kubeconfigPath, '--namespace', SYSTEM, '--wait', '--ignore-not-found']);
    } catch (error) {
      console.error(`cleaning up: ${(error as Error).message}`);
    }
    await uninstall?.();
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch(() => {});
    await deleteNamespaceAndWait(SYSTEM);
    if (release) rmSync(release.dir, { recursive: true, force: true });
    // Only this test pulls from the registry's leaderhook repository. The registry keeps the tags;
    // their layers are the same blobs every run.
    removeRepositoryFromNode(`${registryHost}/leaderhook`);
  });

  test('scripts/publish.sh publishes the image and the chart of a release folder, and refuses to publish a version twice', async (t) => {
    assert.ok(!nodeImages().includes(image), `${image} must not be on the node before anything pulled it`);
    const first = publish(release!.dir);
    t.diagnostic(first.stdout + first.stderr);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`^image: ${image.replaceAll('.', '\\.')}@sha256:[0-9a-f]{64}$`, 'm'));
    assert.match(
      first.stdout,
      new RegExp(`^chart: oci://${registryHost!.replaceAll('.', '\\.')}/charts/leaderhook:${version.replaceAll('.', '\\.')}@sha256:[0-9a-f]{64}$`, 'm'),
    );
    const again = publish(release!.dir);
    assert.equal(again.status, 1, 'a second publish of the same version is refused');
    assert.match(again.stderr, /already exists: a published version must not change/);
  });

  test('deploy/ with images: at the registry: the webhook pods pull the image (IfNotPresent, as shipped)', async (t) => {
    uninstall = await installLeaderhook({ image, pullPolicy: 'IfNotPresent' });
    const pods = await livePods(SYSTEM);
    assert.ok(pods.length >= 1);
    const perPod = await Promise.all(pods.map(async (p) => pullOutcomes(await podEvents(SYSTEM, p.metadata!.name!), 'spec.containers{webhook}', image)));
    t.diagnostic(`webhook pods' Pulled events for ${image}: ${perPod.map((o) => o.join('+')).join(', ')}`);
    for (const pod of pods) assert.equal(pod.spec?.containers[0]?.image, image);
    for (const [i, outcomes] of perPod.entries()) assert.ok(outcomes.length > 0, `no Pulled event of ${image} for ${pods[i]!.metadata!.name}`);
    // One node: the first pod pulls, a second may find what the first pulled.
    assert.ok(perPod.flat().includes('pulled'), `no webhook pod pulled ${image}: ${perPod.flat().join(', ')}`);
  });

  test('an injected hook pulls the image on a node that lacks it, and check passes', async (t) => {
    // On one node the webhook's pull left the image there (by tag and by digest); a node that runs only
    // operators would not have it.
    const repository = `${registryHost}/leaderhook`;
    removeRepositoryFromNode(repository);
    assert.deepEqual(
      nodeImages().filter((name) => name.startsWith(`${repository}:`) || name.startsWith(`${repository}@`)),
      [],
    );
    const ns = await operatorNamespace('registry-pull');
    namespaces.push(ns);
    const pods = await waitFor(
      'the operator pods running, injected',
      async () => {
        const live = await livePods(ns.name);
        return live.length === 2 && live.every((p) => p.status?.phase === 'Running' && p.metadata?.annotations?.['leaderhook.io/injected']) && live;
      },
      PULL_TIMEOUT_MS,
      500,
    );
    for (const pod of pods) assert.equal(pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME)?.image, image);
    // The kubelet may write the Pulled event a moment after the container started.
    const outcomes = await waitFor(
      'the hooks’ Pulled events',
      async () => {
        const all = (await Promise.all(pods.map(async (p) => pullOutcomes(await podEvents(ns.name, p.metadata!.name!), HOOK_FIELD, image)))).flat();
        return all.length === pods.length && all;
      },
      30_000,
      500,
    );
    t.diagnostic(`hooks' Pulled events for ${image}: ${outcomes.join(', ')}`);
    assert.ok(outcomes.includes('pulled'), `no hook pulled ${image}: ${outcomes.join(', ')}`);
    const run = await check(ns.name);
    t.diagnostic(run.output);
    assert.equal(run.status, 0, run.output);
  });

  test('a hook tag the registry lacks: the operator pod sits in Init:ErrImagePull, and check names it with a remedy', async (t) => {
    const missing = `${registryHost}/leaderhook:${version}-missing`;
    await setHookImage(missing, probe!.name);
    const ns = await operatorNamespace('registry-tag', 1);
    namespaces.push(ns);
    const stuck = await podStuckOnHookImage(ns.name, PULL_FAILURES);
    const name = stuck.metadata!.name!;
    t.diagnostic(`${name}: ${JSON.stringify(hookWaiting(stuck))}`);
    assert.equal(stuck.status?.phase, 'Pending');
    const run = await check(ns.name);
    t.diagnostic(run.output);
    assert.equal(run.status, 1, run.output);
    const line = run.lines.find((l) => l.startsWith(`✗ namespace ${ns.name}: hook image: `));
    assert.ok(line, `no ✗ hook image line:\n${run.output}`);
    assert.ok(line.includes(`pod ${name}`), line);
    assert.ok(line.includes(missing), line);
    assert.match(line, /has no such tag/);
    assert.match(line, / — fix: .*publish/);
  });

  test('the registry down: a hook image the node lacks sits in ImagePullBackOff, check names it; back up, the pod starts', async (t) => {
    // A tag the registry has and the node does not: the next hook must pull it.
    const other = `${registryHost}/leaderhook:${version}-other`;
    retag(image, other);
    assert.ok(!nodeImages().includes(other));
    await setHookImage(other, probe!.name);
    await stopRegistry();
    let ns: TestNamespace;
    try {
      ns = await operatorNamespace('registry-down', 1);
      namespaces.push(ns);
      const stuck = await podStuckOnHookImage(ns.name, ['ImagePullBackOff']);
      t.diagnostic(`${stuck.metadata!.name}: ${JSON.stringify(hookWaiting(stuck))}`);
      const run = await check(ns.name);
      t.diagnostic(run.output);
      assert.equal(run.status, 1, run.output);
      const line = run.lines.find((l) => l.startsWith(`✗ namespace ${ns.name}: hook image: `));
      assert.ok(line, `no ✗ hook image line:\n${run.output}`);
      assert.ok(line.includes(`pod ${stuck.metadata!.name}`), line);
      assert.match(line, /ImagePullBackOff/);
      assert.ok(line.includes(`${registryHost} does not answer`), line);
    } finally {
      startRegistry();
    }
    // The kubelet's back-off would retry within minutes; a new pod pulls at once.
    kubectl(['-n', ns.name, 'delete', 'pod', '--all', '--wait=false']);
    await waitFor(
      'the re-created operator pod running with its hook pulled',
      async () => {
        const live = await livePods(ns.name);
        return live.length === 1 && live[0]!.status?.phase === 'Running';
      },
      PULL_TIMEOUT_MS,
      500,
    );
    assert.ok(nodeImages().includes(other), `${other} was pulled once the registry was back`);
  });

  test('helm install of the chart from oci://REGISTRY/charts, the image from the registry', async (t) => {
    await uninstall?.();
    uninstall = undefined;
    kubectl(['create', 'namespace', SYSTEM]);
    kubectl(['label', 'namespace', SYSTEM, 'leaderhook.io/injection=disabled', 'pod-security.kubernetes.io/enforce=restricted']);
    const out = helm([
      'install',
      'leaderhook',
      `oci://${registryHost}/charts/leaderhook`,
      '--version',
      version,
      '--ca-file',
      registryCa!,
      '--set',
      `image.repository=${registryHost}/leaderhook`,
      '--kubeconfig',
      kubeconfigPath,
      '--namespace',
      SYSTEM,
      '--wait',
      '--timeout',
      '3m',
    ]);
    t.diagnostic(out);
    const deployment = await apps.readNamespacedDeployment({ name: 'leaderhook-webhook', namespace: SYSTEM });
    // The tag comes from the chart's appVersion: the chart published beside the image names it.
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, image);
    const pod = await waitFor(
      'the Helm-installed webhook to inject a dry-run pod',
      async () => {
        const created = await core.createNamespacedPod({
          namespace: probe!.name,
          dryRun: 'All',
          body: { metadata: { name: 'probe' }, spec: { containers: [{ name: 'c', image: leaderhookImage }] } },
        });
        return created.metadata?.annotations?.['leaderhook.io/injected'] !== undefined && created;
      },
      120_000,
      500,
    );
    assert.equal(pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME)?.image, image);
    helm(['uninstall', 'leaderhook', '--kubeconfig', kubeconfigPath, '--namespace', SYSTEM, '--wait']);
  });
});
