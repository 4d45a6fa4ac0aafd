/**
 * charts/leaderhook installed on the real cluster as a user would, with the
 * helm test/tools pins (built before the tests enter the cluster's network
 * namespace: test/run-all.sh). cert-manager's controllers do not run here, so
 * the install is certManager.enabled=false with a Secret and CA bundle made
 * from the development CA, and the image is the one
 * scripts/build-local-image.sh imported (pullPolicy Never):
 * - helm install: a dry-run pod of an opted-in namespace comes back injected
 *   with the chart's image as the hook;
 * - helm upgrade of one value (the grace-period floor) takes effect;
 * - helm uninstall removes every object the release created, the webhook
 *   registration with them: pods are no longer injected.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { HOOK_CONTAINER_NAME } from '../../src/injector/index.ts';
import { createCertificateAuthority, issueServingCertificate, WEBHOOK_SERVICE_NAMES } from '../../src/webhook/devcerts.ts';
import { admissionRegistration, apiStatus, connectTestCluster, core, createTestNamespace, kubeconfigPath, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { deleteNamespaceAndWait, INJECTION_LABEL, kubectl, leaderhookImage } from '../support/leaderhook.ts';
import { chartDir, helm, type KubeObject, objectKey, parseObjects } from '../support/tools.ts';

connectTestCluster();

const NAMESPACE = 'leaderhook-system';
const RELEASE = 'leaderhook';
const INJECTED = 'leaderhook.io/injected';
const [repository, tag] = [leaderhookImage.slice(0, leaderhookImage.lastIndexOf(':')), leaderhookImage.slice(leaderhookImage.lastIndexOf(':') + 1)];

const helmHere = (args: string[]) => helm([...args, '--kubeconfig', kubeconfigPath, '--namespace', NAMESPACE]);

describe('helm install, upgrade and uninstall of charts/leaderhook', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'leaderhook-helm-e2e-'));
  const caFile = path.join(scratch, 'ca.crt');
  let ca: string;
  let optedIn: TestNamespace;
  let installed = false;

  /** A dry-run pod of the opted-in namespace, as the API server admits it now. */
  const dryRunPod = () =>
    core.createNamespacedPod({
      namespace: optedIn.name,
      dryRun: 'All',
      body: { metadata: { name: 'probe' }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: leaderhookImage }] } },
    });

  before(async () => {
    // What an earlier run or another test may have left behind.
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: RELEASE }).catch(() => {});
    await deleteNamespaceAndWait(NAMESPACE);
    // As docs/install.md's Helm install: the namespace first, with deploy/'s labels.
    kubectl(['create', 'namespace', NAMESPACE]);
    kubectl(['label', 'namespace', NAMESPACE, 'leaderhook.io/injection=disabled', 'pod-security.kubernetes.io/enforce=restricted']);
    const authority = await createCertificateAuthority('leaderhook helm e2e CA');
    const serving = await issueServingCertificate(authority, WEBHOOK_SERVICE_NAMES);
    ca = authority.cert;
    writeFileSync(caFile, ca);
    await core.createNamespacedSecret({
      namespace: NAMESPACE,
      body: {
        type: 'kubernetes.io/tls',
        metadata: { name: 'leaderhook-webhook-tls' },
        stringData: { 'tls.crt': serving.cert, 'tls.key': serving.key, 'ca.crt': authority.cert },
      },
    });
    optedIn = await createTestNamespace('e2e-helm', INJECTION_LABEL);
  });

  after(async () => {
    await optedIn?.cleanup();
    // A failed test may leave a release behind; the namespace's deletion removes what uninstall could not.
    if (installed) {
      try {
        helmHere(['uninstall', RELEASE, '--wait']);
      } catch (error) {
        console.error(`cleaning up: ${(error as Error).message}`);
      }
    }
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: RELEASE }).catch(() => {});
    await deleteNamespaceAndWait(NAMESPACE);
    rmSync(scratch, { recursive: true, force: true });
  });

  test('helm install: a pod of an opted-in namespace is injected with the chart image as its hook', async () => {
    helmHere([
      'install',
      RELEASE,
      chartDir,
      '--set',
      'certManager.enabled=false',
      '--set-file',
      `tls.caBundle=${caFile}`,
      '--set',
      `image.repository=${repository}`,
      '--set',
      `image.tag=${tag}`,
      '--set',
      'image.pullPolicy=Never',
      '--wait',
      '--timeout',
      '3m',
    ]);
    installed = true;
    const config = await admissionRegistration.readMutatingWebhookConfiguration({ name: RELEASE });
    assert.deepEqual(
      config.webhooks?.map((w) => w.clientConfig.caBundle),
      config.webhooks?.map(() => Buffer.from(ca).toString('base64')),
      'every entry trusts the CA given with --set-file',
    );
    const pod = await waitFor(
      'the chart-installed webhook to inject a dry-run pod',
      async () => {
        const created = await dryRunPod();
        return created.metadata?.annotations?.[INJECTED] !== undefined && created;
      },
      60_000,
      500,
    );
    const hook = pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME);
    assert.deepEqual({ image: hook?.image, pullPolicy: hook?.imagePullPolicy }, { image: leaderhookImage, pullPolicy: 'Never' });
    assert.equal(pod.spec?.terminationGracePeriodSeconds, 10, 'raised to the default floor');
  });

  test('helm upgrade of the grace-period floor takes effect', async () => {
    assert.ok(installed, 'installed by the test before');
    helmHere(['upgrade', RELEASE, chartDir, '--reuse-values', '--set', 'gracePeriod.floor=20s', '--wait', '--timeout', '3m']);
    // Until the old pods have left the Service's endpoints, one of them may still answer.
    const pod = await waitFor(
      'the upgraded webhook to raise the grace period to 20 s',
      async () => {
        const created: V1Pod = await dryRunPod();
        return created.spec?.terminationGracePeriodSeconds === 20 && created;
      },
      60_000,
      500,
    );
    assert.ok(pod.metadata?.annotations?.[INJECTED]);
  });

  test('helm uninstall removes every object the release created, the webhook registration with them', async () => {
    assert.ok(installed, 'installed by the test before');
    const created: KubeObject[] = parseObjects(helmHere(['get', 'manifest', RELEASE]));
    assert.ok(
      created.some((o) => o.kind === 'MutatingWebhookConfiguration'),
      created.map(objectKey).join(', '),
    );
    helmHere(['uninstall', RELEASE, '--wait', '--timeout', '3m']);
    installed = false;
    const left = created.filter((o) => {
      const group = o.apiVersion.includes('/') ? `.${o.apiVersion.split('/')[0]}` : '';
      const namespace = o.metadata.namespace ? ['-n', o.metadata.namespace] : [];
      return kubectl(['get', `${o.kind.toLowerCase()}${group}`, o.metadata.name, ...namespace, '--ignore-not-found', '-o', 'name']).trim() !== '';
    });
    assert.deepEqual(left.map(objectKey), [], 'objects of the release still there after helm uninstall');
    await assert.rejects(admissionRegistration.readMutatingWebhookConfiguration({ name: RELEASE }), (error) => apiStatus(error) === 404);
    assert.equal(helmHere(['list', '--short']).trim(), '', 'no release left');
    const pod = await dryRunPod();
    assert.equal(pod.metadata?.annotations?.[INJECTED], undefined, 'no webhook is called any more');
  });
});
