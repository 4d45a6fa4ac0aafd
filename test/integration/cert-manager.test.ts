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
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { issuedCertificate, issuingCa, renewServingCertificate, trustedCa } from '../support/cert-rotation.ts';
import { admissionRegistration, apiStatus, connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { caBundleRefusals, kubectl, requireCertManager } from '../support/leaderhook.ts';

connectTestCluster();

const certificates = path.join(import.meta.dirname, '../../deploy/certificates.yaml');
const certificatesYaml = readFileSync(certificates, 'utf8');
const registration = parse(
  readFileSync(path.join(import.meta.dirname, '../../deploy/mutatingwebhookconfiguration.yaml'), 'utf8'),
) as V1MutatingWebhookConfiguration;
/** What deploy/'s registration takes its caBundle from, as namespace/name. */
const injectCaFrom = registration.metadata?.annotations?.['cert-manager.io/inject-ca-from'] ?? '';

/** A registration that matches no object (so it is never called), with its caBundle from `source`. */
function probeRegistration(name: string, namespace: string, source: string): V1MutatingWebhookConfiguration {
  return {
    metadata: { name, annotations: { 'cert-manager.io/inject-ca-from': source } },
    webhooks: [
      {
        name: 'probe.leaderhook.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Ignore',
        clientConfig: { service: { name: 'absent', namespace, path: '/mutate' } },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
        // No namespace carries this label: the webhook is never called.
        namespaceSelector: { matchLabels: { 'leaderhook.io/cainjector-probe': namespace } },
      },
    ],
  };
}

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
    for (const name of [probeName, `${probeName}-deploy`]) {
      await admissionRegistration.deleteMutatingWebhookConfiguration({ name }).catch((error) => {
        if (apiStatus(error) !== 404) throw error;
      });
    }
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
    await admissionRegistration.createMutatingWebhookConfiguration({ body: probeRegistration(probeName, ns.name, `${ns.name}/leaderhook-ca`) });
    const ca = await core.readNamespacedSecret({ name: 'leaderhook-ca', namespace: ns.name });
    const bundle = await waitFor(
      `caBundle of MutatingWebhookConfiguration ${probeName}`,
      async () => (await admissionRegistration.readMutatingWebhookConfiguration({ name: probeName })).webhooks?.[0]?.clientConfig.caBundle,
      30_000,
    );
    assert.equal(Buffer.from(bundle, 'base64').toString('utf8').trim(), secretPem(ca.data, 'ca.crt').trim());
  });

  // cert-manager does not re-sign a serving certificate when its CA is issued
  // again: a CA renewal, or a CA Secret lost and made anew — as when
  // leaderhook-system is deleted and applied again at once and cert-manager,
  // its cache still holding the old objects, issues the CA twice. A
  // registration applied after that must still trust the certificate the
  // webhook serves. deploy/ takes the caBundle from the serving certificate's
  // own Secret (ca.crt: the CA that signed it), so the two agree by
  // construction; taken from the CA's Secret, the caBundle would be the new CA
  // while the webhook serves a certificate the old one signed, until its
  // renewal weeks later, and every call would fail TLS.
  test("keeps deploy/'s caBundle verifying the serving certificate when the CA is issued again", async () => {
    assert.match(injectCaFrom, /^leaderhook-system\//, 'deploy/ registration without cert-manager.io/inject-ca-from');
    const name = `${probeName}-deploy`;
    const refusals = () => caBundleRefusals(name, ns.name);

    const oldCa = await issuingCa(ns.name);
    await core.deleteNamespacedSecret({ name: 'leaderhook-ca', namespace: ns.name });
    const newCa = await waitFor(
      'cert-manager to issue the CA again',
      async () => {
        const ca = await issuingCa(ns.name).catch(() => undefined);
        return ca && !ca.publicKey.equals(oldCa.publicKey) ? ca : undefined;
      },
      60_000,
      250,
    );
    assert.ok((await issuedCertificate(ns.name)).verify(oldCa.publicKey), 'the serving certificate was signed again: nothing is tested');

    await admissionRegistration.createMutatingWebhookConfiguration({ body: probeRegistration(name, ns.name, injectCaFrom.replace(/^[^/]+/, ns.name)) });
    await waitFor(`caBundle of MutatingWebhookConfiguration ${name}`, async () => trustedCa(name).catch(() => undefined), 30_000, 250);
    assert.deepEqual(await refusals(), [], 'the caBundle does not verify the certificate the webhook serves');

    // The serving certificate's next renewal is signed by the new CA, and the caBundle follows it.
    await renewServingCertificate((await issuedCertificate(ns.name)).serialNumber, 60_000, ns.name);
    assert.ok((await issuedCertificate(ns.name)).verify(newCa.publicKey), 'the renewed serving certificate is not signed by the new CA');
    await waitFor('the caBundle to verify the renewed serving certificate', async () => (await refusals()).length === 0, 30_000, 250);
  });
});
