/**
 * cert-manager itself — its controller and cainjector built from the Go
 * module (test/cert-manager), run as processes — issues what
 * deploy/certificates.yaml asks for and injects the CA into a
 * MutatingWebhookConfiguration, in a namespace of its own. The webhook
 * registration here is a probe that matches no object, so it is never called
 * and leaderhook's own registration is left alone.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { admissionRegistration, apiStatus, connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { kubectl, requireCertManager } from '../support/leaderhook.ts';

connectTestCluster();

const certificates = path.join(import.meta.dirname, '../../deploy/certificates.yaml');
const certificatesYaml = readFileSync(certificates, 'utf8');

function secretPem(data: Record<string, string> | undefined, key: string): string {
  const value = data?.[key];
  assert.ok(value, `Secret has no ${key}`);
  return Buffer.from(value, 'base64').toString('utf8');
}

describe('cert-manager from its Go module', () => {
  let ns: TestNamespace;
  let probeName: string;

  before(async () => {
    requireCertManager();
    ns = await createTestNamespace('cert-manager');
    probeName = `cainjector-probe-${ns.name}`;
  });
  after(async () => {
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: probeName }).catch((error) => {
      if (apiStatus(error) !== 404) throw error;
    });
    await ns?.cleanup();
  });

  test('issues the CA and the serving certificate of deploy/certificates.yaml', async () => {
    kubectl(['apply', '-n', ns.name, '-f', certificates]);
    kubectl(['wait', '-n', ns.name, '--for=condition=Ready', '--timeout=60s', 'issuer/leaderhook-selfsigned']);
    kubectl(['wait', '-n', ns.name, '--for=condition=Ready', '--timeout=60s', 'certificate/leaderhook-ca', 'issuer/leaderhook-ca']);
    kubectl(['wait', '-n', ns.name, '--for=condition=Ready', '--timeout=60s', 'certificate/leaderhook-webhook']);

    const ca = await core.readNamespacedSecret({ name: 'leaderhook-ca', namespace: ns.name });
    const serving = await core.readNamespacedSecret({ name: 'leaderhook-webhook-tls', namespace: ns.name });
    assert.equal(serving.type, 'kubernetes.io/tls');
    const caCert = new X509Certificate(secretPem(ca.data, 'tls.crt'));
    const cert = new X509Certificate(secretPem(serving.data, 'tls.crt'));
    assert.equal(caCert.ca, true, 'leaderhook-ca is not a CA certificate');
    assert.equal(secretPem(serving.data, 'ca.crt').trim(), caCert.toString().trim(), 'the serving Secret carries another CA');
    assert.ok(cert.checkIssued(caCert) && cert.verify(caCert.publicKey), 'the serving certificate is not signed by leaderhook-ca');
    assert.equal(cert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    const names = cert.subjectAltName?.split(', ').map((n) => n.replace(/^DNS:/, ''));
    assert.deepEqual(names?.sort(), [...certificatesYaml.matchAll(/^\s*- (leaderhook-webhook\S*)$/gm)].map((m) => m[1]).sort());
    // duration: 2160h, from deploy/certificates.yaml
    const lifetimeHours = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 3_600_000;
    assert.ok(Math.abs(lifetimeHours - 2160) < 1, `serving certificate lives ${lifetimeHours} h`);
  });

  test('fills caBundle from cert-manager.io/inject-ca-from', async () => {
    await admissionRegistration.createMutatingWebhookConfiguration({
      body: {
        metadata: { name: probeName, annotations: { 'cert-manager.io/inject-ca-from': `${ns.name}/leaderhook-ca` } },
        webhooks: [
          {
            name: 'probe.leaderhook.io',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Ignore',
            clientConfig: { service: { name: 'absent', namespace: ns.name, path: '/mutate' } },
            rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
            // No namespace carries this label: the webhook is never called.
            namespaceSelector: { matchLabels: { 'leaderhook.io/cainjector-probe': ns.name } },
          },
        ],
      },
    });
    const ca = await core.readNamespacedSecret({ name: 'leaderhook-ca', namespace: ns.name });
    const bundle = await waitFor(
      `caBundle of MutatingWebhookConfiguration ${probeName}`,
      async () => (await admissionRegistration.readMutatingWebhookConfiguration({ name: probeName })).webhooks?.[0]?.clientConfig.caBundle,
      30_000,
    );
    assert.equal(Buffer.from(bundle, 'base64').toString('utf8').trim(), secretPem(ca.data, 'ca.crt').trim());
  });
});
