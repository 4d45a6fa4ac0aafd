/**
 * deploy/'s webhook registration against the code it calls: the workload
 * rules name exactly the kinds the webhook answers, and the entries that
 * inject pods keep the exclusions that stop a webhook from hurting a cluster.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { WORKLOAD_KINDS } from '../../src/injector/workloads.ts';

const config = parse(readFileSync(new URL('../../deploy/mutatingwebhookconfiguration.yaml', import.meta.url), 'utf8')) as V1MutatingWebhookConfiguration;
const entry = (name: string) => {
  const found = config.webhooks?.find((w) => w.name === name);
  assert.ok(found, `deploy/ registers ${name}`);
  return found;
};

describe('deploy/mutatingwebhookconfiguration.yaml', () => {
  it('asks about exactly the workload kinds the webhook answers, on CREATE and UPDATE, failing open', () => {
    const workloads = entry('warn-workloads.leaderhook.io');
    assert.equal(workloads.failurePolicy, 'Ignore');
    const registered = (workloads.rules ?? []).flatMap((r) =>
      (r.apiGroups ?? []).flatMap((g) => (r.resources ?? []).map((res) => `${g}/${r.apiVersions?.join()}/${res}`)),
    );
    assert.deepEqual(registered.sort(), WORKLOAD_KINDS.map((k) => `${k.group}/${k.version}/${k.resource}`).sort());
    for (const rule of workloads.rules ?? []) assert.deepEqual(rule.operations, ['CREATE', 'UPDATE']);
    assert.deepEqual(
      workloads.matchConditions?.map((c) => c.name),
      ['not-controller-owned'],
      "a controller's ReplicaSets and Jobs are not sent: their owner was checked",
    );
  });

  it('injects pods of enabled and required namespaces, fails closed only in required ones, and never for its own or kube-system', () => {
    const inject = entry('inject.leaderhook.io');
    const required = entry('require-pod-name.leaderhook.io');
    assert.equal(
      config.webhooks?.indexOf(inject),
      0,
      'the Ignore entry runs first, so an answering webhook has added POD_NAME before the Fail entry is matched',
    );
    assert.equal(inject.failurePolicy, 'Ignore');
    assert.equal(required.failurePolicy, 'Fail');
    const modes = (w: typeof inject) => w.namespaceSelector?.matchExpressions?.find((e) => e.key === 'leaderhook.io/injection')?.values;
    assert.deepEqual(modes(inject), ['enabled', 'required']);
    assert.deepEqual(modes(required), ['required']);
    for (const w of config.webhooks ?? []) {
      const excluded = w.namespaceSelector?.matchExpressions?.find((e) => e.key === 'kubernetes.io/metadata.name');
      assert.deepEqual({ operator: excluded?.operator, values: excluded?.values }, { operator: 'NotIn', values: ['leaderhook-system', 'kube-system'] }, w.name);
      assert.ok((w.timeoutSeconds ?? 10) <= 5, `${w.name}: a short timeout`);
    }
    for (const w of [inject, required]) {
      assert.deepEqual(w.objectSelector?.matchExpressions, [{ key: 'leaderhook.io/inject', operator: 'NotIn', values: ['false'] }], w.name);
    }
    assert.deepEqual(
      required.matchConditions?.map((c) => c.name),
      ['lacks-pod-name', 'not-opted-out', 'not-a-mirror-pod'],
    );
  });
});
