/**
 * What `leaderhook check` expects of the registration is what deploy/ ships:
 * the image has no deploy/ to read, so this proves the copy in
 * src/check/registration.ts (and the check's defaults) match it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { V1Deployment, V1MutatingWebhookConfiguration, V1Service } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { DEFAULT_WEBHOOK_SERVICE, EXPECTED_WEBHOOKS, registrationProblems, webhookEssentials, webhookService } from '../../../src/check/registration.ts';
import { checkFlags } from '../../../src/commands/flags.ts';
import type { Wire } from '../../../src/kube/types.ts';

const deployFile = (name: string) => readFileSync(new URL(`../../../deploy/${name}`, import.meta.url), 'utf8');
const shipped = parse(deployFile('mutatingwebhookconfiguration.yaml')) as Wire<V1MutatingWebhookConfiguration>;
const flagDefault = (name: string) => checkFlags.find((f) => f.name === name)?.default;

/** deploy/'s registration as the API server returns it once cert-manager injected the CA. */
function live(): Wire<V1MutatingWebhookConfiguration> {
  const config = structuredClone(shipped);
  for (const w of config.webhooks ?? []) w.clientConfig.caBundle = Buffer.from('a CA').toString('base64');
  return config;
}

describe('the registration leaderhook check expects', () => {
  it('is deploy/mutatingwebhookconfiguration.yaml, entry by entry and in order', () => {
    assert.deepEqual(shipped.webhooks?.map(webhookEssentials), EXPECTED_WEBHOOKS);
    assert.deepEqual(registrationProblems(live()), []);
  });

  it("the check's defaults name deploy/'s objects: the registration, the Service, the TLS Secret", () => {
    assert.equal(flagDefault('webhook-configuration'), shipped.metadata?.name);
    assert.deepEqual(webhookService(shipped), DEFAULT_WEBHOOK_SERVICE);
    const service = parse(deployFile('service.yaml')) as V1Service;
    assert.equal(service.metadata?.name, DEFAULT_WEBHOOK_SERVICE.name);
    const certificate = parseAllDocuments(deployFile('certificates.yaml'))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string }; spec: { secretName: string } })
      .find((o) => o.kind === 'Certificate' && o.metadata.name === 'leaderhook-webhook');
    assert.equal(certificate?.spec.secretName, flagDefault('tls-secret'));
    const deployment = parse(deployFile('deployment.yaml')) as V1Deployment;
    assert.ok(deployment.spec?.template.spec?.volumes?.some((v) => v.secret?.secretName === flagDefault('tls-secret')));
  });

  it('names each difference: a missing entry, a changed policy, a wrong order, a missing caBundle', () => {
    const config = live();
    const [inject, required] = config.webhooks!;
    inject!.failurePolicy = 'Fail';
    required!.clientConfig.caBundle = undefined;
    config.webhooks = [required!, inject!];
    assert.deepEqual(registrationProblems(config), [
      'inject.leaderhook.io: failurePolicy is Fail, deploy/ has Ignore',
      'require-pod-name.leaderhook.io comes before an entry deploy/ puts first',
      "require-pod-name.leaderhook.io has no caBundle (cert-manager's cainjector fills it)",
      'warn-workloads.leaderhook.io is missing',
    ]);
  });

  it('compares what the API server stores: its defaults count, extra entries of an overlay do not', () => {
    const config = live();
    const workloads = config.webhooks![2]!;
    workloads.objectSelector = {};
    config.webhooks!.push({ ...structuredClone(workloads), name: 'extra.example.com', failurePolicy: 'Fail' });
    assert.deepEqual(registrationProblems(config), []);
    config.webhooks![0]!.namespaceSelector = {};
    assert.match(registrationProblems(config).join(), /inject.leaderhook.io: namespaceSelector is \{\}, deploy\/ has/);
  });
});
