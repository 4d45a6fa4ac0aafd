/**
 * deploy/ against a real API server: the kustomization renders with kubectl's
 * built-in kustomize and every object passes server-side dry-run, with
 * cert-manager's own CRDs installed from the cert-manager Go module (pinned).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { certManagerCrdDir } from '../support/cert-manager.ts';
import { apiStatus, connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { deleteNamespaceAndWait, kubectl, renderWithImage } from '../support/leaderhook.ts';

connectTestCluster();

describe('deploy/ on a real API server', () => {
  before(async () => {
    const crds = certManagerCrdDir();
    for (const file of readdirSync(crds).filter((f) => f.startsWith('cert-manager.io_'))) {
      kubectl(['apply', '--server-side', '-f', path.join(crds, file)]);
    }
    kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/certificates.cert-manager.io', 'crd/issuers.cert-manager.io']);
    // Namespaced objects cannot be dry-run into a namespace that does not exist.
    await deleteNamespaceAndWait('leaderhook-system');
    await core.createNamespace({ body: { metadata: { name: 'leaderhook-system' } } });
  });
  after(async () => {
    await deleteNamespaceAndWait('leaderhook-system');
  });

  test('the kustomization renders the objects docs/design.md#the-webhook asks for', () => {
    const rendered = kubectl(['kustomize', 'deploy']);
    for (const kind of [
      'Namespace',
      'ServiceAccount',
      'Deployment',
      'Service',
      'PodDisruptionBudget',
      'MutatingWebhookConfiguration',
      'Issuer',
      'Certificate',
    ]) {
      assert.match(rendered, new RegExp(`^kind: ${kind}$`, 'm'), `no ${kind} in deploy/`);
    }
    for (const setting of [
      'failurePolicy: Ignore',
      'failurePolicy: Fail',
      'matchConditions:',
      'timeoutSeconds: 5',
      'sideEffects: None',
      'reinvocationPolicy: IfNeeded',
      'cert-manager.io/inject-ca-from',
    ]) {
      assert.ok(rendered.includes(setting), `webhook registration lacks ${setting}`);
    }
  });

  test("one image value sets the webhook's image and the hook it injects, in deploy/ and in an overlay", () => {
    const hookImage = (rendered: string) => {
      const deployment = parseAllDocuments(rendered)
        .map((d) => d.toJS() as V1Deployment)
        .find((o) => o?.kind === 'Deployment');
      const container = deployment?.spec?.template.spec?.containers.find((c) => c.name === 'webhook');
      return { image: container?.image, hook: container?.env?.find((e) => e.name === 'LEADERHOOK_HOOK_IMAGE')?.value };
    };
    const base = hookImage(kubectl(['kustomize', 'deploy']));
    assert.match(base.image ?? '', /^leaderhook:\d/);
    assert.equal(base.hook, base.image);
    const overlay = hookImage(renderWithImage('registry.example.com/team/leaderhook:9.9.9', 'Always'));
    assert.deepEqual(overlay, { image: 'registry.example.com/team/leaderhook:9.9.9', hook: 'registry.example.com/team/leaderhook:9.9.9' });
  });

  test('every object of deploy/ passes server-side dry-run', () => {
    const out = kubectl(['apply', '-k', 'deploy', '--dry-run=server']);
    assert.match(out, /deployment.apps\/leaderhook-webhook .*\(server dry run\)/);
    assert.match(out, /mutatingwebhookconfiguration.admissionregistration.k8s.io\/leaderhook .*\(server dry run\)/);
    assert.match(out, /certificate.cert-manager.io\/leaderhook-webhook .*\(server dry run\)/);
  });

  describe('operator RBAC and the example namespace', () => {
    let ns: TestNamespace;
    before(async () => {
      ns = await createTestNamespace('deploy-rbac');
    });
    after(async () => ns?.cleanup());

    test('operator-rbac applies in an operator namespace', () => {
      const out = kubectl(['apply', '-k', 'deploy/operator-rbac', '-n', ns.name, '--dry-run=server']);
      assert.match(out, /role.rbac.authorization.k8s.io\/leaderhook-release .*\(server dry run\)/);
      assert.match(out, /rolebinding.rbac.authorization.k8s.io\/leaderhook-release .*\(server dry run\)/);
    });

    test('the example opted-in namespace is valid', async () => {
      const out = kubectl(['apply', '-f', 'deploy/examples/opted-in-namespace.yaml', '--dry-run=server']);
      assert.match(out, /namespace\/memcached-operator-system .*\(server dry run\)/);
      await waitFor(
        'nothing was created by the dry run',
        async () => {
          try {
            await core.readNamespace({ name: 'memcached-operator-system' });
            return false;
          } catch (error) {
            return apiStatus(error) === 404;
          }
        },
        5_000,
      );
    });
  });
});
