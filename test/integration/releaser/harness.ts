/**
 * What the release hook's cluster tests share: an admin client (the test
 * kubeconfig's, through test/support/raw-api.ts, so that no setup or check
 * goes through src/kube, the client under test), one test
 * namespace per case with the documented Role bound to a service account,
 * a Node object that no kubelet serves (pods bound to it keep whatever
 * status the test writes, and a graceful delete leaves them Terminating),
 * and a hook running in-process with that service account's token.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { pino } from 'pino';
import { createKubeClient, type KubeClient } from '../../../src/kube/client.ts';
import { kubeconfigConfig } from '../../../src/kube/config.ts';
import type { ConfigMap, KopfPeering, KubeEvent, Lease, List, Pod } from '../../../src/kube/types.ts';
import { type ReleaserOptions, type RunningReleaser, runReleaser } from '../../../src/releaser/releaser.ts';
import { broughtOwnCluster, clusterStateDir, kubeconfigPath } from '../../support/kube.ts';
import { apiRequest, isNotFoundAnswer } from '../../support/raw-api.ts';
import { waitFor as poll } from '../../support/wait.ts';

/** The admin kubeconfig, which the hook's own kubeconfigs copy the cluster entry from. */
export { kubeconfigPath } from '../../support/kube.ts';
/** Kept for the describe() calls: each test file's connectTestCluster() already refused to run where no cluster is. */
export const skipReason: string | undefined = undefined;

/** The Role and RoleBinding users install (deploy/operator-rbac); the binding's subject is set per namespace. */
const roleDocs = ['role.yaml', 'rolebinding.yaml'].flatMap((file) =>
  parseAllDocuments(readFileSync(new URL(`../../../deploy/operator-rbac/${file}`, import.meta.url), 'utf8')).map((d) => d.toJS() as Record<string, unknown>),
);

export const pauseImage = process.env.LEADERHOOK_PAUSE_IMAGE ?? 'leaderhook.local/pause:3.10';

/** The few calls the tests make as cluster admin; errors are ApiRequestErrors (status and message). */
export interface AdminClient {
  request<T = unknown>(call: { method: string; path: string; body?: unknown }): Promise<T>;
  getPod(namespace: string, name: string): Promise<Pod>;
  getConfigMap(namespace: string, name: string): Promise<ConfigMap>;
  getLease(namespace: string, name: string): Promise<Lease>;
}

const adminClient: AdminClient = {
  request: ({ method, path, body }) => apiRequest(method, path, body),
  getPod: (namespace, name) => apiRequest('GET', `/api/v1/namespaces/${namespace}/pods/${name}`),
  getConfigMap: (namespace, name) => apiRequest('GET', `/api/v1/namespaces/${namespace}/configmaps/${name}`),
  getLease: (namespace, name) => apiRequest('GET', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`),
};

export async function admin(): Promise<AdminClient> {
  return adminClient;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** waitFor of test/support/wait.ts, with the release hook tests' defaults: 15 s, asking every 50 ms. */
export function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 15_000, everyMs = 50): Promise<T> {
  return poll(what, check, timeoutMs, everyMs);
}

/**
 * Runs `fn` with the local cluster's kube-controller-manager stopped
 * (SIGSTOP, then SIGCONT by its PID, whatever happens), so that the garbage
 * collector cannot free a lock in the meantime: what is freed then was freed
 * by the hook. The controller manager runs without leader election, so a
 * short pause costs it nothing. Undefined outside the local cluster (a
 * brought-own cluster's controllers are not ours to stop).
 */
export function pauseGarbageCollector(): (<T>(fn: () => Promise<T>) => Promise<T>) | undefined {
  if (broughtOwnCluster) return undefined;
  let pid: number;
  try {
    pid = Number(readFileSync(join(clusterStateDir, 'pids', 'kube-controller-manager.pid'), 'utf8').trim());
    if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kube-controller-manager')) return undefined;
  } catch {
    return undefined;
  }
  return async (fn) => {
    process.kill(pid, 'SIGSTOP');
    try {
      return await fn();
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  };
}

export function suffix(): string {
  return randomBytes(3).toString('hex');
}

/** A Node object with no kubelet behind it. Pods bound to it tolerate its taints forever. */
export async function createFakeNode(): Promise<string> {
  const kube = await admin();
  const name = `lh-fake-node-${suffix()}`;
  await kube.request({
    method: 'POST',
    path: '/api/v1/nodes',
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'leaderhook.io/test': 'fake-node' } } },
  });
  return name;
}

export async function deleteNode(name: string): Promise<void> {
  const kube = await admin();
  await kube.request({ method: 'DELETE', path: `/api/v1/nodes/${name}` }).catch(() => {});
}

export interface TestNamespace {
  name: string;
  /** Service account the hook runs as (bound to the documented Role unless told otherwise). */
  serviceAccount: string;
  /** A kubeconfig file with a token for that service account. */
  kubeconfig: string;
  cleanup(): Promise<void>;
}

/**
 * A fresh namespace with service account `operator`, bound to deploy/operator-rbac (or
 * to `rules` instead, to test missing permissions), and a kubeconfig that
 * authenticates as that service account through a TokenRequest valid for
 * `tokenSeconds`. A hook reads that token once: unlike a pod's projected
 * token, nobody renews it, so a process that runs longer must ask for more.
 */
export async function createNamespace(prefix: string, rules?: unknown[], { tokenSeconds = 3600 } = {}): Promise<TestNamespace> {
  const kube = await admin();
  const name = `${prefix}-${suffix()}`;
  await kube.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'leaderhook.io/test': 'releaser' } } },
  });
  await kube.request({
    method: 'POST',
    path: `/api/v1/namespaces/${name}/serviceaccounts`,
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'operator' } },
  });
  for (const doc of roleDocs) {
    const kind = doc.kind as string;
    const body = structuredClone(doc);
    if (kind === 'Role' && rules) body.rules = rules;
    if (kind === 'RoleBinding') body.subjects = [{ kind: 'ServiceAccount', name: 'operator', namespace: name }];
    const resource = kind === 'Role' ? 'roles' : 'rolebindings';
    await kube.request({ method: 'POST', path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${name}/${resource}`, body });
  }
  const tokenRequest = await kube.request<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${name}/serviceaccounts/operator/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: tokenSeconds } },
  });
  const adminDoc = parse(readFileSync(kubeconfigPath as string, 'utf8')) as {
    'current-context': string;
    contexts: { name: string; context: { cluster: string } }[];
    clusters: { name: string; cluster: Record<string, unknown> }[];
  };
  const clusterName = adminDoc.contexts.find((c) => c.name === adminDoc['current-context'])?.context.cluster;
  const cluster = adminDoc.clusters.find((c) => c.name === clusterName)?.cluster ?? {};
  const dir = mkdtempSync(join(tmpdir(), 'leaderhook-releaser-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const caPath = typeof cluster['certificate-authority'] === 'string' ? (cluster['certificate-authority'] as string) : undefined;
  const clusterEntry: Record<string, unknown> = { server: cluster.server };
  if (cluster['certificate-authority-data']) clusterEntry['certificate-authority-data'] = cluster['certificate-authority-data'];
  else if (caPath) clusterEntry['certificate-authority'] = caPath.startsWith('/') ? caPath : join(kubeconfigPath as string, '..', caPath);
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'hook',
      clusters: [{ name: 'c', cluster: clusterEntry }],
      users: [{ name: 'operator', user: { token: tokenRequest.status.token } }],
      contexts: [{ name: 'hook', context: { cluster: 'c', user: 'operator', namespace: name } }],
    }),
  );
  return {
    name,
    serviceAccount: 'operator',
    kubeconfig,
    async cleanup() {
      // Pods on the fake node never finish a graceful delete: force them.
      const pods = await kube.request<List<Pod>>({ method: 'GET', path: `/api/v1/namespaces/${name}/pods` }).catch(() => ({ items: [] as Pod[] }));
      await Promise.all(
        pods.items.map((p) =>
          kube.request({ method: 'DELETE', path: `/api/v1/namespaces/${name}/pods/${p.metadata?.name}`, body: { gracePeriodSeconds: 0 } }).catch(() => {}),
        ),
      );
      await kube.request({ method: 'DELETE', path: `/api/v1/namespaces/${name}` }).catch(() => {});
    },
  };
}

const tolerateFakeNode = [
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
];

/** What every test pod's spec starts with: bound to `node`, the namespace's ServiceAccount without a token, tolerating the fake node. */
function boundTo(node: string) {
  return {
    nodeName: node,
    serviceAccountName: 'operator',
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 30,
    tolerations: tolerateFakeNode,
  };
}

/** A pod bound to `node` (a fake node, or the real one). Containers: an init container, the hook sidecar, the operator. */
export async function createPod(
  ns: string,
  name: string,
  node: string,
  extra: { labels?: Record<string, string>; annotations?: Record<string, string>; spec?: Record<string, unknown> } = {},
): Promise<Pod> {
  const kube = await admin();
  return kube.request<Pod>({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/pods`,
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: extra.labels ?? { app: 'operator' }, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
      spec: {
        ...boundTo(node),
        initContainers: [
          { name: 'setup', image: pauseImage, imagePullPolicy: 'Never' },
          { name: 'leaderhook', image: pauseImage, imagePullPolicy: 'Never', restartPolicy: 'Always' },
        ],
        containers: [{ name: 'manager', image: pauseImage, imagePullPolicy: 'Never' }],
        ...extra.spec,
      },
    },
  });
}

/**
 * A real ReplicaSet whose `replicas` pods the controller creates on `node`,
 * with createPod's spec and `spec` added; resolves with them once all exist.
 */
export async function createReplicaSet(ns: string, name: string, node: string, replicas: number, spec: Record<string, unknown> = {}): Promise<Pod[]> {
  const kube = await admin();
  const labels = { app: name };
  await kube.request({
    method: 'POST',
    path: `/apis/apps/v1/namespaces/${ns}/replicasets`,
    body: {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            ...boundTo(node),
            containers: [{ name: 'manager', image: pauseImage, imagePullPolicy: 'Never' }],
            ...spec,
          },
        },
      },
    },
  });
  return waitFor(`${replicas} pods of ReplicaSet ${name}`, async () => {
    const list = await kube.request<List<Pod>>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${name}` });
    return list.items.length === replicas && list.items;
  });
}

type ContainerState = 'running' | 'terminated' | 'waiting';

/**
 * Writes a pod status through the status subresource, as a kubelet would
 * (the fake node has none). `containers` gives each container's state;
 * unnamed containers are terminated.
 */
export async function setPodStatus(
  ns: string,
  name: string,
  phase: string,
  reason: string | undefined,
  containers: Record<string, ContainerState> = {},
): Promise<Pod> {
  const kube = await admin();
  const pod = await kube.getPod(ns, name);
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const status = (n: string) => {
    const s = containers[n] ?? 'terminated';
    const state =
      s === 'running'
        ? { running: { startedAt: now } }
        : s === 'waiting'
          ? { waiting: { reason: 'CrashLoopBackOff' } }
          : { terminated: { exitCode: 137, reason: 'Error', startedAt: now, finishedAt: now } };
    return { name: n, image: pauseImage, imageID: '', ready: s === 'running', restartCount: 0, started: s === 'running', state };
  };
  const spec = pod.spec as NonNullable<Pod['spec']>;
  const body = {
    ...pod,
    status: {
      phase,
      ...(reason ? { reason, message: `set by test: ${reason}` } : {}),
      initContainerStatuses: (spec.initContainers ?? []).map((c) => status(c.name)),
      containerStatuses: spec.containers.map((c) => status(c.name)),
    },
  };
  return kube.request<Pod>({ method: 'PUT', path: `/api/v1/namespaces/${ns}/pods/${name}/status`, body });
}

/** A lock exactly as operator-lib's leader.Become creates it. */
export async function createLock(ns: string, name: string, holder: { name: string; uid: string }): Promise<ConfigMap> {
  const kube = await admin();
  return kube.request<ConfigMap>({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/configmaps`,
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: holder.name, uid: holder.uid }] } },
  });
}

/** A Lease held by `holderIdentity`; with `ownerReferences` when given. */
export async function createLease(ns: string, name: string, holderIdentity: string, ownerReferences?: OwnerRef[]): Promise<Lease> {
  const kube = await admin();
  const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
  return kube.request<Lease>({
    method: 'POST',
    path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`,
    body: {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, ...(ownerReferences ? { ownerReferences } : {}) },
      spec: { holderIdentity, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 2 },
    },
  });
}

type OwnerRef = { apiVersion: string; kind: string; name: string; uid: string };

/**
 * A Lease as leader-for-life Lease election (nais/elector style) writes it:
 * a single ownerReference to the leader's Pod, which it also names as holder.
 * `owners` replaces the ownerReferences, for Leases that must not count as a lock.
 */
export function createOwnedLease(
  ns: string,
  name: string,
  holder: { name: string; uid: string },
  owners: OwnerRef[] = [{ apiVersion: 'v1', kind: 'Pod', ...holder }],
): Promise<Lease> {
  return createLease(ns, name, holder.name, owners);
}

async function isGone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (err) {
    if (isNotFoundAnswer(err)) return true;
    throw err;
  }
}

export async function configMapGone(ns: string, name: string): Promise<boolean> {
  const kube = await admin();
  return isGone(() => kube.getConfigMap(ns, name));
}

export async function leaseGone(ns: string, name: string): Promise<boolean> {
  const kube = await admin();
  return isGone(() => kube.getLease(ns, name));
}

export async function events(ns: string, reason?: string): Promise<KubeEvent[]> {
  const kube = await admin();
  const list = await kube.request<List<KubeEvent>>({ method: 'GET', path: `/api/v1/namespaces/${ns}/events` });
  return list.items.filter((e) => !reason || e.reason === reason);
}

/** Deletes a pod gracefully; on a fake node it then stays Terminating with a deletionTimestamp. */
export async function deletePod(ns: string, name: string, gracePeriodSeconds: number): Promise<void> {
  const kube = await admin();
  await kube.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/pods/${name}`, body: { gracePeriodSeconds } });
}

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

export interface HookUnderTest {
  releaser: RunningReleaser;
  client: KubeClient;
  logs: LogLine[];
  stop(): Promise<void>;
}

/**
 * Starts the hook in-process as pod `pod`, authenticated as the namespace's
 * service account through its kubeconfig. Its log lines are collected (and
 * echoed when LEADERHOOK_TEST_VERBOSE is set).
 */
export async function startHook(
  ns: TestNamespace,
  pod: Pod,
  options: Partial<ReleaserOptions> = {},
  wrapClient: (client: KubeClient) => KubeClient = (c) => c,
): Promise<HookUnderTest> {
  const client = createKubeClient(await kubeconfigConfig(ns.kubeconfig));
  const logs: LogLine[] = [];
  const verbose = Boolean(process.env.LEADERHOOK_TEST_VERBOSE);
  const logger = pino(
    { level: 'debug', base: { component: 'release-hook' } },
    {
      write(line: string) {
        logs.push(JSON.parse(line) as LogLine);
        if (verbose) process.stderr.write(line);
      },
    },
  );
  const releaser = await runReleaser({
    podName: pod.metadata?.name as string,
    podNamespace: ns.name,
    podUid: pod.metadata?.uid as string,
    waitReportIntervalSeconds: 60,
    client: wrapClient(client),
    logger,
    ...options,
  });
  return {
    releaser,
    client,
    logs,
    async stop() {
      await releaser.stop();
      client.close();
    },
  };
}

/** kopf's peering definitions (test/operators/manifests/kopf-peering-crds.yaml), created once and left in place, as CRDs are; resolves once served. */
export async function ensureKopfPeeringCrds(): Promise<void> {
  const kube = await admin();
  const docs = parseAllDocuments(readFileSync(new URL('../../operators/manifests/kopf-peering-crds.yaml', import.meta.url), 'utf8')).map(
    (d) => d.toJS() as { metadata: { name: string } },
  );
  for (const crd of docs) {
    await kube.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body: crd }).catch((err: { status?: number }) => {
      if (err.status !== 409) throw err;
    });
  }
  await waitFor(
    "kopf's peering definitions established",
    async () => {
      for (const crd of docs) {
        const got = await kube.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
          method: 'GET',
          path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
        });
        if (!got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return false;
      }
      return true;
    },
    30_000,
    200,
  );
}

/** Binds deploy/operator-rbac-kopf's Role to the namespace's service account, as a user opting in does. */
export async function grantKopfPeering(ns: TestNamespace): Promise<void> {
  const kube = await admin();
  for (const file of ['role.yaml', 'rolebinding.yaml']) {
    const body = parse(readFileSync(new URL(`../../../deploy/operator-rbac-kopf/${file}`, import.meta.url), 'utf8')) as Record<string, unknown>;
    const resource = body.kind === 'Role' ? 'roles' : 'rolebindings';
    if (body.kind === 'RoleBinding') body.subjects = [{ kind: 'ServiceAccount', name: ns.serviceAccount, namespace: ns.name }];
    await kube.request({ method: 'POST', path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns.name}/${resource}`, body });
  }
}

/** A KopfPeering with these entries, as kopf writes them ({priority, lifetime, lastseen}). */
export async function createKopfPeering(ns: string, name: string, entries: Record<string, number>): Promise<KopfPeering> {
  const kube = await admin();
  const lastseen = new Date().toISOString();
  const status = Object.fromEntries(Object.entries(entries).map(([id, priority]) => [id, { priority, lifetime: 60, lastseen }]));
  return kube.request<KopfPeering>({
    method: 'POST',
    path: `/apis/kopf.dev/v1/namespaces/${ns}/kopfpeerings`,
    body: { apiVersion: 'kopf.dev/v1', kind: 'KopfPeering', metadata: { name }, status },
  });
}

export async function getKopfPeering(ns: string, name: string): Promise<KopfPeering> {
  return (await admin()).request<KopfPeering>({ method: 'GET', path: `/apis/kopf.dev/v1/namespaces/${ns}/kopfpeerings/${name}` });
}

/** createPod's containers, with the operator's POD_ID set from `fieldPath` as kopf reads it. */
export function kopfOperatorSpec(fieldPath: 'metadata.uid' | 'metadata.name'): Record<string, unknown> {
  return {
    containers: [{ name: 'manager', image: pauseImage, imagePullPolicy: 'Never', env: [{ name: 'POD_ID', valueFrom: { fieldRef: { fieldPath } } }] }],
  };
}
