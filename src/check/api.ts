/**
 * The API calls `leaderhook check` makes, as a two-method interface over the
 * project's own client (src/kube/client.ts): the checks read and dry-run,
 * and a test can answer them from memory.
 */
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/errors.ts';
import type { List } from '../kube/types.ts';

export type Query = Record<string, string | undefined>;

export interface CheckApi {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body: unknown, query?: Query): Promise<T>;
}

export function clientApi(client: KubeClient, timeoutMs: number): CheckApi {
  return {
    get: (path, query) => client.request({ method: 'GET', path, ...(query ? { query } : {}), timeoutMs }),
    post: (path, body, query) => client.request({ method: 'POST', path, body, ...(query ? { query } : {}), timeoutMs }),
  };
}

/** Every item of a list, page by page: a namespace of thousands of pods is not one response. */
export async function listAll<T>(api: CheckApi, path: string, query: Query = {}): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await api.get<List<T>>(path, { ...query, limit: '500', continue: next });
    items.push(...page.items);
    next = page.metadata?.continue || undefined;
  } while (next);
  return items;
}

export function statusOf(error: unknown): number | undefined {
  return error instanceof KubeApiError ? error.status : undefined;
}

/** The remedy for a call the API refused: 403 is the user's RBAC, not leaderhook's. */
export function remedyForError(error: unknown, needs: string): string {
  if (statusOf(error) === 403) return `run leaderhook check as a user who may ${needs} (cluster-admin may)`;
  if (statusOf(error) === 0) return 'check that the API server is reachable (--kubeconfig, --context) and retry';
  return 'see the error; retry once the API server answers';
}

export const apiPaths = {
  version: () => '/version',
  selfSubjectReviews: () => '/apis/authentication.k8s.io/v1/selfsubjectreviews',
  webhookConfiguration: (name: string) => `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${encodeURIComponent(name)}`,
  namespaces: () => '/api/v1/namespaces',
  namespace: (name: string) => `/api/v1/namespaces/${encodeURIComponent(name)}`,
  secret: (ns: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets/${encodeURIComponent(name)}`,
  service: (ns: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/services/${encodeURIComponent(name)}`,
  endpointSlices: (ns: string) => `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/endpointslices`,
  pods: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`,
  node: (name: string) => `/api/v1/nodes/${encodeURIComponent(name)}`,
  subjectAccessReviews: () => '/apis/authorization.k8s.io/v1/subjectaccessreviews',
};
