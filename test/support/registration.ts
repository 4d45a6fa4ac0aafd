/**
 * What every webhook registration leaderhook ships must guarantee, whether it
 * comes from deploy/ (kustomize) or from the Helm chart: the workload rules
 * name exactly the kinds the webhook answers, and the entries that inject pods
 * keep the exclusions that stop a webhook from hurting a cluster.
 */
import assert from 'node:assert/strict';
import type { V1MutatingWebhook, V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { WORKLOAD_KINDS } from '../../src/injector/workloads.ts';

export function webhookEntry(config: V1MutatingWebhookConfiguration, name: string): V1MutatingWebhook {
  const found = config.webhooks?.find((w) => w.name === name);
  assert.ok(found, `the registration has an entry ${name}`);
  return found;
}

/** Asks about exactly the workload kinds the webhook answers, on CREATE and UPDATE, failing open. */
export function assertWorkloadEntry(config: V1MutatingWebhookConfiguration): void {
  const workloads = webhookEntry(config, 'warn-workloads.leaderhook.io');
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
}

/**
 * Injects pods of enabled and required namespaces, with the Ignore entry
 * first; the Fail entry only for pods lacking POD_NAME; never the webhook's
 * own namespace, kube-system or pods labelled leaderhook.io/inject=false;
 * short timeouts. `failurePolicies` are the expected policies of the inject
 * and require-pod-name entries (a chart user may change them).
 */
export function assertPodEntries(
  config: V1MutatingWebhookConfiguration,
  ownNamespace: string,
  failurePolicies = { enabled: 'Ignore', required: 'Fail' },
): void {
  const inject = webhookEntry(config, 'inject.leaderhook.io');
  const required = webhookEntry(config, 'require-pod-name.leaderhook.io');
  assert.equal(config.webhooks?.indexOf(inject), 0, 'the inject entry runs first, so an answering webhook has added POD_NAME before the Fail entry is matched');
  assert.equal(inject.failurePolicy, failurePolicies.enabled);
  assert.equal(required.failurePolicy, failurePolicies.required);
  const modes = (w: V1MutatingWebhook) => w.namespaceSelector?.matchExpressions?.find((e) => e.key === 'leaderhook.io/injection')?.values;
  assert.deepEqual(modes(inject), ['enabled', 'required']);
  assert.deepEqual(modes(required), ['required']);
  for (const w of config.webhooks ?? []) {
    const excluded = w.namespaceSelector?.matchExpressions?.find((e) => e.key === 'kubernetes.io/metadata.name' && e.operator === 'NotIn');
    assert.deepEqual(excluded?.values, [ownNamespace, 'kube-system'], `${w.name}: the webhook's own namespace and kube-system are never sent`);
    assert.ok((w.timeoutSeconds ?? 10) <= 5, `${w.name}: a short timeout`);
  }
  for (const w of [inject, required]) {
    assert.deepEqual(
      w.objectSelector?.matchExpressions?.[0],
      { key: 'leaderhook.io/inject', operator: 'NotIn', values: ['false'] },
      `${w.name}: pods labelled leaderhook.io/inject=false are not sent`,
    );
  }
  assert.deepEqual(
    required.matchConditions?.map((c) => c.name),
    ['lacks-pod-name', 'not-opted-out', 'not-a-mirror-pod'],
  );
}
