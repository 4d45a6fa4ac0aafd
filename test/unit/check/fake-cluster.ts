/**
 * A cluster answered from memory for the tests of `leaderhook check`: what
 * the API server would return for leaderhook as deploy/ installs it, with
 * one opted-in namespace `ops`. The dry-run pod goes through the real
 * injector, as the webhook would inject it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { parse } from 'yaml';
import type { CheckApi, Query } from '../../../src/check/api.ts';
import { injectPod } from '../../../src/injector/index.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import type { Pod, Wire } from '../../../src/kube/types.ts';
import type { PemPair } from '../../../src/webhook/devcerts.ts';
import { goldenSettings } from '../../support/injection-settings.ts';

export const b64 = (text: string) => Buffer.from(text).toString('base64');
const registration = parse(
  readFileSync(new URL('../../../deploy/mutatingwebhookconfiguration.yaml', import.meta.url), 'utf8'),
) as Wire<V1MutatingWebhookConfiguration>;

export function notFound(path: string): KubeApiError {
  return new KubeApiError({ method: 'GET', path, status: 404, reason: 'NotFound', detail: 'not found' });
}

/** A cluster where leaderhook runs as deploy/ installs it, with one opted-in namespace `ops` and its injected operator pod. */
export interface FakeCluster {
  registration: Wire<V1MutatingWebhookConfiguration> | undefined;
  secret: Record<string, string>;
  readyEndpoints: number;
  webhookInjects: boolean;
  namespaces: { name: string; mode: string }[];
  pods: Pod[];
  /** `namespace:serviceAccount` → the permissions it is denied, as `resource/verb`. */
  denied: Map<string, string[]>;
  nodeImages: string[];
}

export function fakeApi(cluster: FakeCluster): CheckApi & { dryRuns: Pod[] } {
  const dryRuns: Pod[] = [];
  const get = async (path: string, query?: Query): Promise<unknown> => {
    if (path === '/version') return { gitVersion: 'v1.34.4' };
    if (path === '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/leaderhook') {
      if (!cluster.registration) throw notFound(path);
      return cluster.registration;
    }
    if (path === '/api/v1/namespaces/leaderhook-system/secrets/leaderhook-webhook-tls') return { data: cluster.secret };
    if (path === '/api/v1/namespaces/leaderhook-system/services/leaderhook-webhook')
      return { spec: { selector: { 'app.kubernetes.io/component': 'webhook' } } };
    if (path === '/apis/discovery.k8s.io/v1/namespaces/leaderhook-system/endpointslices') {
      assert.equal(query?.labelSelector, 'kubernetes.io/service-name=leaderhook-webhook');
      const endpoints = [...Array(2).keys()].map((i) => ({ addresses: [`10.0.0.${i}`], conditions: { ready: i < cluster.readyEndpoints } }));
      return { items: [{ endpoints }] };
    }
    if (path === '/api/v1/namespaces') {
      assert.equal(query?.labelSelector, 'leaderhook.io/injection in (enabled,required)');
      return {
        items: cluster.namespaces.map((n) => ({ metadata: { name: n.name, labels: { 'leaderhook.io/injection': n.mode } }, status: { phase: 'Active' } })),
      };
    }
    const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path)?.[1];
    if (namespace) {
      const found = cluster.namespaces.find((n) => n.name === namespace);
      if (!found) throw notFound(path);
      return { metadata: { name: found.name, labels: found.mode ? { 'leaderhook.io/injection': found.mode } : {} } };
    }
    if (path === '/api/v1/namespaces/ops/pods') return { items: cluster.pods };
    if (path.startsWith('/api/v1/nodes/')) return { status: { images: [{ names: cluster.nodeImages }] } };
    throw notFound(path);
  };
  const post = async (path: string, body: unknown, query?: Query): Promise<unknown> => {
    if (path === '/apis/authentication.k8s.io/v1/selfsubjectreviews') return { status: { userInfo: { username: 'kubernetes-admin' } } };
    if (path === '/api/v1/namespaces/ops/pods') {
      assert.equal(query?.dryRun, 'All', 'the probe pod is never stored');
      dryRuns.push(body as Pod);
      return cluster.webhookInjects ? injectPod(structuredClone(body), goldenSettings).pod : body;
    }
    if (path === '/apis/authorization.k8s.io/v1/subjectaccessreviews') {
      const spec = (body as { spec: { user: string; resourceAttributes: { namespace: string; resource: string; verb: string } } }).spec;
      const account = spec.user.replace('system:serviceaccount:', '');
      const allowed = !(cluster.denied.get(account) ?? []).includes(`${spec.resourceAttributes.resource}/${spec.resourceAttributes.verb}`);
      return { status: { allowed } };
    }
    throw notFound(path);
  };
  return { get: get as CheckApi['get'], post: post as CheckApi['post'], dryRuns };
}

/** leaderhook as deploy/ installs it, its certificate signed by `ca`, and an injected operator pod in `ops`. */
export function healthyCluster(ca: PemPair, serving: PemPair): FakeCluster {
  const config = structuredClone(registration);
  for (const w of config.webhooks ?? []) w.clientConfig.caBundle = b64(ca.cert);
  const operator = injectPod(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'op-0' },
      spec: { serviceAccountName: 'manager', nodeName: 'node-1', containers: [{ name: 'op', image: 'op:1' }] },
    },
    goldenSettings,
  ).pod as Pod;
  return {
    registration: config,
    secret: { 'tls.crt': b64(serving.cert), 'tls.key': b64(serving.key), 'ca.crt': b64(ca.cert) },
    readyEndpoints: 2,
    webhookInjects: true,
    namespaces: [{ name: 'ops', mode: 'enabled' }],
    pods: [operator],
    denied: new Map(),
    nodeImages: [goldenSettings.image],
  };
}
