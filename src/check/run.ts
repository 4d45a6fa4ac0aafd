/**
 * `leaderhook check`, in the order a broken install is best explained: the
 * registration, its certificate and endpoints, then every opted-in
 * namespace. Each check reports and the next one runs whatever it found, so
 * one run names every problem; results are emitted as they come.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import { errorMessage } from '../error-message.ts';
import type { List, Wire } from '../kube/types.ts';
import { INJECTION_LABEL } from '../labels.ts';
import { apiPaths, type CheckApi, remedyForError, statusOf } from './api.ts';
import { checkEndpoints, checkRegistration, checkServingCertificate } from './install-checks.ts';
import { checkDryRunPod, checkHookImagePull, checkInjectedPods, checkPermissions, listPods } from './namespace-checks.ts';
import { EXCLUDED_NAMESPACES, INJECTION_MODES, webhookService } from './registration.ts';
import { type CheckResult, failed, listSome, passed } from './report.ts';

export interface CheckOptions {
  webhookConfiguration: string;
  tlsSecret: string;
  /** Only this namespace; all opted-in ones when unset. */
  namespace?: string;
  now: Date;
  /** The API server's address and where it came from (the kubeconfig), for the first line. */
  server: string;
}

const labelRemedy = (ns: string) => `kubectl label namespace ${ns} ${INJECTION_LABEL}=enabled (or =required; see the README's Install)`;

/**
 * Which cluster, and as whom: nothing else can be checked without an answer,
 * and the name of the user explains a 403 further down.
 */
async function checkApiServer(api: CheckApi, server: string): Promise<CheckResult> {
  const title = 'API server';
  const remedy = 'check --kubeconfig and --context (kubectl config view --minify shows what they select), and that the cluster is up';
  let version: string;
  let user: string | undefined;
  try {
    version = (await api.get<{ gitVersion?: string }>(apiPaths.version())).gitVersion ?? 'version unknown';
    const review = await api.post<{ status?: { userInfo?: { username?: string } } }>(apiPaths.selfSubjectReviews(), {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    });
    user = review.status?.userInfo?.username;
  } catch (error) {
    return failed(title, `${server}: ${errorMessage(error)}`, remedy);
  }
  return passed(title, `${server}: Kubernetes ${version}${user ? `, as ${user}` : ''}`);
}

/** The namespaces to check, and the result that says which (or why none). */
async function optedInNamespaces(api: CheckApi, only: string | undefined): Promise<{ result: CheckResult; names: string[] }> {
  const title = 'opted-in namespaces';
  if (only !== undefined) {
    let namespace: Wire<V1Namespace>;
    try {
      namespace = await api.get(apiPaths.namespace(only));
    } catch (error) {
      if (statusOf(error) === 404) return { result: failed(title, `namespace ${only} not found`, 'name an existing namespace with --namespace'), names: [] };
      return { result: failed(title, errorMessage(error), remedyForError(error, 'get namespaces')), names: [] };
    }
    const mode = namespace.metadata?.labels?.[INJECTION_LABEL];
    if (!(INJECTION_MODES as readonly string[]).includes(mode ?? '')) {
      const why = mode === undefined ? `has no label ${INJECTION_LABEL}` : `has ${INJECTION_LABEL}=${mode}`;
      return { result: failed(title, `namespace ${only} ${why}: its pods are not injected`, labelRemedy(only)), names: [] };
    }
    if (EXCLUDED_NAMESPACES.includes(only)) {
      return { result: failed(title, `namespace ${only} is one the registration never sends`, 'run operators in a namespace of their own'), names: [] };
    }
    return { result: passed(title, `namespace ${only} has ${INJECTION_LABEL}=${mode}`), names: [only] };
  }
  let list: List<Wire<V1Namespace>>;
  try {
    list = await api.get(apiPaths.namespaces(), { labelSelector: `${INJECTION_LABEL} in (${INJECTION_MODES.join(',')})` });
  } catch (error) {
    return { result: failed(title, errorMessage(error), remedyForError(error, 'list namespaces')), names: [] };
  }
  // A namespace being deleted refuses new pods, and those the registration excludes never get any.
  const names = list.items
    .filter((ns) => ns.status?.phase !== 'Terminating' && !EXCLUDED_NAMESPACES.includes(ns.metadata?.name ?? ''))
    .map((ns) => ns.metadata?.name ?? '')
    .sort();
  if (names.length === 0) return { result: failed(title, 'none: leaderhook injects no pod yet', labelRemedy("<your operator's namespace>")), names };
  return { result: passed(title, listSome(names, 10)), names };
}

async function checkNamespace(api: CheckApi, namespace: string, webhookNamespace: string, emit: (r: CheckResult) => void): Promise<void> {
  const dryRun = await checkDryRunPod(api, namespace, webhookNamespace);
  emit(dryRun.result);
  let pods: Awaited<ReturnType<typeof listPods>>;
  try {
    pods = await listPods(api, namespace);
  } catch (error) {
    emit(failed(`namespace ${namespace}: pods`, errorMessage(error), remedyForError(error, `list pods in ${namespace}`)));
    return;
  }
  for (const result of await checkPermissions(api, namespace, pods)) emit(result);
  emit(checkInjectedPods(namespace, pods));
  const image = await checkHookImagePull(api, namespace, pods, dryRun.hook);
  if (image) emit(image);
}

/** Runs every check, calling `emit` with each result as it is known; returns them all. */
export async function runChecks(api: CheckApi, options: CheckOptions, emit: (r: CheckResult) => void = () => {}): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const record = (result: CheckResult) => {
    results.push(result);
    emit(result);
  };
  const server = await checkApiServer(api, options.server);
  record(server);
  if (!server.ok) return results;
  const registration = await checkRegistration(api, options.webhookConfiguration);
  record(registration.result);
  record(await checkServingCertificate(api, registration.config, options.tlsSecret, options.now));
  record(await checkEndpoints(api, registration.config));
  const namespaces = await optedInNamespaces(api, options.namespace);
  record(namespaces.result);
  const webhookNamespace = webhookService(registration.config).namespace;
  for (const namespace of namespaces.names) await checkNamespace(api, namespace, webhookNamespace, record);
  return results;
}
