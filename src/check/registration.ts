/**
 * The webhook registration leaderhook ships (deploy/mutatingwebhookconfiguration.yaml)
 * as `leaderhook check` compares it: what decides which objects reach the
 * webhook and what an outage does, not every byte. The image carries no
 * deploy/, so the entries live here; test/unit/check/registration.test.ts
 * proves they are what deploy/ holds.
 */
import { isDeepStrictEqual } from 'node:util';
import type { V1MutatingWebhook, V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { WORKLOAD_KINDS } from '../injector/workloads.ts';
import type { Wire } from '../kube/types.ts';
import { annotations } from '../annotations.ts';
import { INJECTION_LABEL } from '../labels.ts';

/** The values of the namespace label that opt a namespace in (the inject entry's namespaceSelector). */
export const INJECTION_MODES = ['enabled', 'required'] as const;

/** Where the registration sends reviews when the live object does not say (deploy/service.yaml). */
export const DEFAULT_WEBHOOK_SERVICE = { namespace: 'leaderhook-system', name: 'leaderhook-webhook' } as const;

/** What matters of one entry, in a form two entries can be compared by. */
export interface WebhookEssentials {
  name: string;
  failurePolicy: string;
  sideEffects: string;
  timeoutSeconds: number;
  reinvocationPolicy: string;
  /** `OPERATIONS group/version/resource`, sorted. */
  rules: string[];
  namespaceSelector: unknown;
  objectSelector: unknown;
  /** Names only: the CEL may be written differently and mean the same. */
  matchConditions: string[];
  /** `path:port` of the Service it calls. */
  service: string;
}

/** A selector the API server stores as `{}` when none was given. */
function selector(value: unknown): unknown {
  return value === undefined || value === null ? {} : value;
}

/** The essentials of an entry as the API server stores it (with its defaults) or as deploy/ writes it. */
export function webhookEssentials(webhook: V1MutatingWebhook): WebhookEssentials {
  const rules = (webhook.rules ?? []).flatMap((rule) =>
    (rule.apiGroups ?? []).flatMap((group) =>
      (rule.apiVersions ?? []).flatMap((version) =>
        (rule.resources ?? []).map((resource) => `${(rule.operations ?? []).join(',')} ${group}/${version}/${resource}`),
      ),
    ),
  );
  const service = webhook.clientConfig?.service;
  return {
    name: webhook.name,
    failurePolicy: webhook.failurePolicy ?? 'Fail',
    sideEffects: webhook.sideEffects,
    timeoutSeconds: webhook.timeoutSeconds ?? 10,
    reinvocationPolicy: webhook.reinvocationPolicy ?? 'Never',
    rules: rules.sort(),
    namespaceSelector: selector(webhook.namespaceSelector),
    objectSelector: selector(webhook.objectSelector),
    matchConditions: (webhook.matchConditions ?? []).map((c) => c.name),
    service: service ? `${service.path ?? '/'}:${service.port ?? 443}` : '(no service: url)',
  };
}

/** Namespaces no entry ever sends, whatever their label. */
export const EXCLUDED_NAMESPACES: readonly string[] = [DEFAULT_WEBHOOK_SERVICE.namespace, 'kube-system'];
const excludedNamespaces = { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...EXCLUDED_NAMESPACES] };
const notOptedOut = { matchExpressions: [{ key: annotations.inject, operator: 'NotIn', values: ['false'] }] };
const podRules = ['CREATE /v1/pods'];

/** The entry that refuses pods without POD_NAME in required namespaces while the webhook is down. */
export const REQUIRE_POD_NAME_WEBHOOK = 'require-pod-name.leaderhook.io';

/** deploy/'s entries, in deploy/'s order: the Ignore entry must run before the Fail one. */
export const EXPECTED_WEBHOOKS: readonly WebhookEssentials[] = [
  {
    name: 'inject.leaderhook.io',
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    timeoutSeconds: 5,
    reinvocationPolicy: 'IfNeeded',
    rules: podRules,
    namespaceSelector: { matchExpressions: [{ key: INJECTION_LABEL, operator: 'In', values: [...INJECTION_MODES] }, excludedNamespaces] },
    objectSelector: notOptedOut,
    matchConditions: [],
    service: '/mutate:443',
  },
  {
    name: REQUIRE_POD_NAME_WEBHOOK,
    failurePolicy: 'Fail',
    sideEffects: 'None',
    timeoutSeconds: 5,
    reinvocationPolicy: 'IfNeeded',
    rules: podRules,
    namespaceSelector: { matchExpressions: [{ key: INJECTION_LABEL, operator: 'In', values: ['required'] }, excludedNamespaces] },
    objectSelector: notOptedOut,
    matchConditions: ['lacks-pod-name', 'not-opted-out', 'not-a-mirror-pod'],
    service: '/mutate:443',
  },
  {
    name: 'warn-workloads.leaderhook.io',
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    timeoutSeconds: 5,
    reinvocationPolicy: 'Never',
    rules: WORKLOAD_KINDS.map((k) => `CREATE,UPDATE ${k.group}/${k.version}/${k.resource}`).sort(),
    namespaceSelector: { matchExpressions: [{ key: INJECTION_LABEL, operator: 'In', values: [...INJECTION_MODES] }, excludedNamespaces] },
    objectSelector: {},
    matchConditions: ['not-controller-owned'],
    service: '/mutate:443',
  },
];

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * How the live registration differs from deploy/'s, one phrase per
 * difference (empty when it has every entry, in order, as shipped, each with
 * a caBundle). Extra entries are left alone: an overlay may add its own.
 */
export function registrationProblems(config: Wire<V1MutatingWebhookConfiguration>): string[] {
  const problems: string[] = [];
  const live = config.webhooks ?? [];
  let previous = -1;
  for (const expected of EXPECTED_WEBHOOKS) {
    const index = live.findIndex((w) => w.name === expected.name);
    const webhook = live[index];
    if (webhook === undefined) {
      problems.push(`${expected.name} is missing`);
      continue;
    }
    if (index < previous) problems.push(`${expected.name} comes before an entry deploy/ puts first`);
    previous = index;
    const actual = webhookEssentials(webhook);
    for (const field of Object.keys(expected) as (keyof WebhookEssentials)[]) {
      if (!isDeepStrictEqual(actual[field], expected[field])) {
        problems.push(`${expected.name}: ${field} is ${show(actual[field])}, deploy/ has ${show(expected[field])}`);
      }
    }
    if (!webhook.clientConfig?.caBundle) problems.push(`${expected.name} has no caBundle (cert-manager's cainjector fills it)`);
  }
  return problems;
}

/** The Service the registration's pod-injecting entry calls. */
export function webhookService(config: Wire<V1MutatingWebhookConfiguration> | undefined): { namespace: string; name: string } {
  const service = config?.webhooks?.find((w) => w.name === EXPECTED_WEBHOOKS[0]!.name)?.clientConfig?.service;
  return service?.name && service.namespace ? { namespace: service.namespace, name: service.name } : DEFAULT_WEBHOOK_SERVICE;
}
