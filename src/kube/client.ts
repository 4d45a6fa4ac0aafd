import type * as http from 'node:http';
import type { ClusterConfig } from './config.ts';
import { HttpTransport } from './transport.ts';
import type { ConfigMap, KopfPeering, KubeEvent, Lease, List, Pod, SelfSubjectAccessReview } from './types.ts';

export interface RequestOptions {
  /** Whole-request deadline; default 10 s. */
  timeoutMs?: number;
  /** Cancels the request (the caller's own deadline, shutdown). */
  signal?: AbortSignal;
}

export interface ApiRequest extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Accept header; default application/json. */
  accept?: string;
  /** Content-Type of the body; default application/json. */
  contentType?: string;
}

export interface StreamRequest {
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Abort when the stream stays silent this long (a dead TCP peer sends nothing). */
  idleTimeoutMs: number;
  /** Deadline for the response headers. */
  connectTimeoutMs?: number;
  signal?: AbortSignal;
  /** Accept header; default application/json. */
  accept?: string;
}

export interface ListOptions extends RequestOptions {
  fieldSelector?: string;
  labelSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

/**
 * Accept headers that make the API server answer with PartialObjectMetadata:
 * names, owners and resourceVersions without `data`, as client-go's metadata
 * informers ask. Plain JSON stays acceptable as a fallback, which costs memory
 * but never correctness: every release reads the full object live first.
 */
export const metadataAccept = {
  list: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
  watch: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json',
} as const;

export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** API paths of the few resources the release hook touches. */
export const paths = {
  pods: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`,
  pod: (ns: string, name: string) => `${paths.pods(ns)}/${encodeURIComponent(name)}`,
  configMaps: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps`,
  configMap: (ns: string, name: string) => `${paths.configMaps(ns)}/${encodeURIComponent(name)}`,
  leases: (ns: string) => `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/leases`,
  lease: (ns: string, name: string) => `${paths.leases(ns)}/${encodeURIComponent(name)}`,
  events: (ns: string) => `/api/v1/namespaces/${encodeURIComponent(ns)}/events`,
  selfSubjectAccessReviews: () => '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
  /** kopf's namespaced peering objects, or with `ns` undefined its cluster-scoped ones. */
  kopfPeerings: (ns: string | undefined) =>
    ns === undefined ? '/apis/kopf.dev/v1/clusterkopfpeerings' : `/apis/kopf.dev/v1/namespaces/${encodeURIComponent(ns)}/kopfpeerings`,
  kopfPeering: (ns: string | undefined, name: string) => `${paths.kopfPeerings(ns)}/${encodeURIComponent(name)}`,
};

/** A JSON merge patch (RFC 7386), as kopf writes its peering entries. */
export const mergePatchType = 'application/merge-patch+json';

export interface KubeClient {
  readonly config: ClusterConfig;
  /** Bytes of response bodies received so far (requests and watch streams): what the hook's start costs the API server. */
  readonly stats: Readonly<{ bytesReceived: number }>;
  request<T>(req: ApiRequest): Promise<T>;
  /** Opens a streaming GET (watch); resolves once a 200 response has started. */
  openStream(req: StreamRequest): Promise<http.IncomingMessage>;

  getPod(ns: string, name: string, opts?: RequestOptions): Promise<Pod>;
  /** Whole pods: the release hook lists them only at SIGTERM, to prove a hostname unique. */
  listPods(ns: string, opts?: ListOptions): Promise<List<Pod>>;
  getConfigMap(ns: string, name: string, opts?: RequestOptions): Promise<ConfigMap>;
  /** Metadata only (PartialObjectMetadataList): no `data`, so the size does not grow with the namespace. */
  listConfigMapsMetadata(ns: string, opts?: ListOptions): Promise<List<ConfigMap>>;
  /** Deletes only the object these preconditions describe; 409 when it changed or was re-created. */
  deleteConfigMap(ns: string, name: string, preconditions: Preconditions, opts?: RequestOptions): Promise<void>;
  getLease(ns: string, name: string, opts?: RequestOptions): Promise<Lease>;
  listLeases(ns: string, opts?: ListOptions): Promise<List<Lease>>;
  /** PUT: the API rejects it with 409 unless metadata.resourceVersion is still current. */
  updateLease(ns: string, lease: Lease, opts?: RequestOptions): Promise<Lease>;
  /** Deletes only the Lease these preconditions describe; 409 when it changed or was re-created. */
  deleteLease(ns: string, name: string, preconditions: Preconditions, opts?: RequestOptions): Promise<void>;
  createEvent(ns: string, event: KubeEvent, opts?: RequestOptions): Promise<KubeEvent>;
  /** kopf's peering objects of namespace `ns`, or with `ns` undefined the cluster-scoped ones; 404 when kopf's CRD is not installed. */
  listKopfPeerings(ns: string | undefined, opts?: ListOptions): Promise<List<KopfPeering>>;
  getKopfPeering(ns: string | undefined, name: string, opts?: RequestOptions): Promise<KopfPeering>;
  /** A merge patch; one carrying metadata.resourceVersion is rejected with 409 unless that version is still current. */
  patchKopfPeering(ns: string | undefined, name: string, patch: KopfPeering, opts?: RequestOptions): Promise<KopfPeering>;
  createSelfSubjectAccessReview(review: SelfSubjectAccessReview, opts?: RequestOptions): Promise<SelfSubjectAccessReview>;
  /** Closes idle keep-alive sockets. */
  close(): void;
}

function listQuery(opts: ListOptions | undefined): ApiRequest['query'] {
  return {
    fieldSelector: opts?.fieldSelector,
    labelSelector: opts?.labelSelector,
    limit: opts?.limit,
    continue: opts?.continue,
    resourceVersion: opts?.resourceVersion,
  };
}

/** A DELETE guarded by preconditions (docs/design.md#live-reads-and-guarded-writes). */
async function deleteWith(
  request: <T>(req: ApiRequest) => Promise<T>,
  path: string,
  preconditions: Preconditions,
  opts: RequestOptions | undefined,
): Promise<void> {
  await request<unknown>({ method: 'DELETE', path, body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions }, ...opts });
}

/**
 * A Kubernetes API client over HttpTransport: the few calls the hook makes,
 * each a request of the transport. A plain object of functions, so a test can
 * wrap it with a spread.
 */
export function createKubeClient(config: ClusterConfig): KubeClient {
  const transport = new HttpTransport(config);
  const request = <T>(req: ApiRequest): Promise<T> => transport.request<T>(req);
  return {
    config,
    stats: transport.stats,
    request,
    openStream: (req) => transport.openStream(req),
    getPod: (ns, name, opts) => request<Pod>({ method: 'GET', path: paths.pod(ns, name), ...opts }),
    listPods: (ns, opts) => request<List<Pod>>({ method: 'GET', path: paths.pods(ns), query: listQuery(opts), ...pickRequest(opts) }),
    getConfigMap: (ns, name, opts) => request<ConfigMap>({ method: 'GET', path: paths.configMap(ns, name), ...opts }),
    listConfigMapsMetadata: (ns, opts) =>
      request<List<ConfigMap>>({ method: 'GET', path: paths.configMaps(ns), query: listQuery(opts), accept: metadataAccept.list, ...pickRequest(opts) }),
    deleteConfigMap: (ns, name, preconditions, opts) => deleteWith(request, paths.configMap(ns, name), preconditions, opts),
    getLease: (ns, name, opts) => request<Lease>({ method: 'GET', path: paths.lease(ns, name), ...opts }),
    listLeases: (ns, opts) => request<List<Lease>>({ method: 'GET', path: paths.leases(ns), query: listQuery(opts), ...pickRequest(opts) }),
    updateLease: (ns, lease, opts) => {
      const name = lease.metadata?.name;
      if (!name) return Promise.reject(new Error(`updating a Lease in ${ns}: metadata.name is empty`));
      return request<Lease>({ method: 'PUT', path: paths.lease(ns, name), body: lease, ...opts });
    },
    deleteLease: (ns, name, preconditions, opts) => deleteWith(request, paths.lease(ns, name), preconditions, opts),
    createEvent: (ns, event, opts) => request<KubeEvent>({ method: 'POST', path: paths.events(ns), body: event, ...opts }),
    listKopfPeerings: (ns, opts) => request<List<KopfPeering>>({ method: 'GET', path: paths.kopfPeerings(ns), query: listQuery(opts), ...pickRequest(opts) }),
    getKopfPeering: (ns, name, opts) => request<KopfPeering>({ method: 'GET', path: paths.kopfPeering(ns, name), ...opts }),
    patchKopfPeering: (ns, name, patch, opts) =>
      request<KopfPeering>({ method: 'PATCH', path: paths.kopfPeering(ns, name), body: patch, contentType: mergePatchType, ...opts }),
    createSelfSubjectAccessReview: (review, opts) =>
      request<SelfSubjectAccessReview>({ method: 'POST', path: paths.selfSubjectAccessReviews(), body: review, ...opts }),
    close: () => transport.close(),
  };
}

function pickRequest(opts: ListOptions | undefined): RequestOptions {
  const out: RequestOptions = {};
  if (opts?.timeoutMs !== undefined) out.timeoutMs = opts.timeoutMs;
  if (opts?.signal) out.signal = opts.signal;
  return out;
}
