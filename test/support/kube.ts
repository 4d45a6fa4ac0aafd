/**
 * The Kubernetes cluster the integration and end-to-end tests run against:
 * `LEADERHOOK_KUBECONFIG` (bring your own cluster), else the local cluster
 * that `npm run cluster:up` started. Tests of the local cluster run inside its
 * network namespace (test/cluster/in-netns.sh), the only place it is reachable.
 * Nothing connects on import: each test file, benchmark and script calls
 * connectTestCluster() once, where a reader sees that it needs a cluster.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { AdmissionregistrationV1Api, ApiException, AppsV1Api, CoordinationV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { waitFor } from './wait.ts';

/** True when the tests use a cluster they did not start (no network namespace, no local state). */
export const broughtOwnCluster = Boolean(process.env.LEADERHOOK_KUBECONFIG);

/** The local cluster's state directory (test/cluster/lib.sh keeps the same default). */
export const clusterStateDir = process.env.LEADERHOOK_CLUSTER_DIR ?? join(homedir(), '.cache', 'leaderhook', 'cluster');

export const kubeconfigPath = process.env.LEADERHOOK_KUBECONFIG ?? join(clusterStateDir, 'admin.kubeconfig');

/**
 * The local cluster's addresses exist only inside its network namespace;
 * outside it, the same addresses lead to the machine's network. Refuse to
 * start rather than send a single request there.
 */
function assertInsideClusterNetns(): void {
  const netns = process.env.LEADERHOOK_NETNS ?? 'leaderhook';
  const cluster = statSync(`/run/netns/${netns}`, { throwIfNoEntry: false });
  if (cluster === undefined) {
    throw new Error(`no network namespace ${netns}: start the local cluster with \`npm run cluster:up\` or set LEADERHOOK_KUBECONFIG`);
  }
  if (statSync('/proc/self/ns/net').ino !== cluster.ino) {
    throw new Error(`not inside the cluster's network namespace ${netns}: run the tests through test/cluster/in-netns.sh`);
  }
}

/**
 * Stands in for a client until connectTestCluster() is called, so that a
 * module that forgot to connect fails with a message instead of "undefined".
 */
function notConnected<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get() {
      throw new Error(`test/support/kube.ts: ${name} used before connectTestCluster(); call it at the top of the test file, benchmark or script`);
    },
  });
}

export let kubeConfig: KubeConfig = notConnected('kubeConfig');
export let core: CoreV1Api = notConnected('core');
export let apps: AppsV1Api = notConnected('apps');
export let coordination: CoordinationV1Api = notConnected('coordination');
export let rbac: RbacAuthorizationV1Api = notConnected('rbac');
export let admissionRegistration: AdmissionregistrationV1Api = notConnected('admissionRegistration');
let connectedTo: string | undefined;

/**
 * Connects the clients this module exports to the test cluster: the local
 * cluster (refused outside its network namespace, before any request), the
 * cluster of LEADERHOOK_KUBECONFIG, or `kubeconfig` (a tooling test's
 * scripted API server). Every test file, benchmark and script that talks to
 * a cluster calls it once at its top; importing this module does nothing.
 */
export function connectTestCluster(kubeconfig?: string): KubeConfig {
  const path = kubeconfig ?? kubeconfigPath;
  if (connectedTo !== undefined) {
    if (connectedTo !== path) throw new Error(`test/support/kube.ts: already connected to ${connectedTo}, not ${path}`);
    return kubeConfig;
  }
  if (kubeconfig === undefined && !broughtOwnCluster) assertInsideClusterNetns();
  if (!existsSync(path)) {
    throw new Error(
      `no kubeconfig at ${path}: start the local cluster with \`npm run cluster:up\` or set LEADERHOOK_KUBECONFIG to an existing cluster's kubeconfig`,
    );
  }
  const config = new KubeConfig();
  config.loadFromFile(path);
  kubeConfig = config;
  core = config.makeApiClient(CoreV1Api);
  apps = config.makeApiClient(AppsV1Api);
  coordination = config.makeApiClient(CoordinationV1Api);
  rbac = config.makeApiClient(RbacAuthorizationV1Api);
  admissionRegistration = config.makeApiClient(AdmissionregistrationV1Api);
  connectedTo = path;
  return config;
}

/** The HTTP status of a failed API call, or undefined for any other error. */
export function apiStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** The label every namespace and fake node the tests and benchmarks make carries. */
export const TEST_LABEL = 'leaderhook.io/test';
/** npm run demo's namespaces, which it leaves running for a look afterwards. */
const DEMO_NAMESPACES = ['demo-with-leaderhook', 'demo-without-leaderhook'];

/**
 * Refuses to measure on a cluster that still holds namespaces or fake nodes
 * of an earlier run (one cut short, or the demo's): their operators would run
 * beside the benchmark's and it would time their load too. Namespaces being
 * deleted are let be: they are on their way out. `npm run cluster:clean`
 * (test/cluster/clean.sh) removes the rest. A refusal is said in one line
 * and exits 2, as a bad option does: it is the user's to fix, not a crash.
 */
export async function refuseLeftovers(benchmark: string): Promise<void> {
  const namespaces = (await core.listNamespace()).items
    .filter((ns) => ns.metadata?.labels?.[TEST_LABEL] !== undefined || DEMO_NAMESPACES.includes(ns.metadata?.name ?? ''))
    .filter((ns) => ns.metadata?.deletionTimestamp === undefined)
    .map((ns) => ns.metadata?.name as string);
  const nodes = (await core.listNode({ labelSelector: TEST_LABEL })).items.map((node) => node.metadata?.name as string);
  if (namespaces.length === 0 && nodes.length === 0) return;
  const named = (kind: string, names: string[]) =>
    `${names.length} ${kind}${names.length === 1 ? '' : 's'} (${names.slice(0, 4).join(', ')}${names.length > 4 ? ', ...' : ''})`;
  process.stderr.write(
    `${benchmark}: the cluster still holds ${[named('namespace', namespaces), named('fake node', nodes)].filter((_, i) => [namespaces, nodes][i]?.length).join(' and ')} ` +
      'of an earlier run, whose operators would run beside this one: run npm run cluster:clean first\n',
  );
  process.exit(2);
}

export interface TestNamespace {
  name: string;
  /** Deletes the namespace (and so everything in it); does not wait for it to be gone. */
  cleanup: () => Promise<void>;
}

/**
 * Creates a namespace named `<prefix>-<random>` and waits until its default
 * ServiceAccount exists, since pods cannot be created before that.
 */
export async function createTestNamespace(prefix: string, labels: Record<string, string> = {}): Promise<TestNamespace> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)) {
    throw new Error(`test namespace name ${JSON.stringify(name)} is not a DNS label: use a short lowercase prefix`);
  }
  await core.createNamespace({ body: { metadata: { name, labels: { [TEST_LABEL]: 'true', ...labels } } } });
  const cleanup = async (): Promise<void> => {
    try {
      await core.deleteNamespace({ name, propagationPolicy: 'Background' });
    } catch (error) {
      if (apiStatus(error) !== 404) throw error;
    }
  };
  try {
    await waitFor(`ServiceAccount default in namespace ${name}`, () => core.readNamespacedServiceAccount({ name: 'default', namespace: name }), 30_000);
  } catch (error) {
    await cleanup();
    throw error;
  }
  return { name, cleanup };
}
