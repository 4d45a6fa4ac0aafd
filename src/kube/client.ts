import type * as http from 'node:http';
import * as https from 'node:https';
import { UserFacingError } from '../user-facing-error.ts';
import { version } from '../version.ts';
import type { ClusterConfig } from './config.ts';
import { errorFromResponse, KubeApiError } from './errors.ts';
import type { ConfigMap, KubeEvent, Lease, List, Pod, SelfSubjectAccessReview } from './types.ts';

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
};

export interface KubeClient {
  readonly config: ClusterConfig;
  /** Bytes of response bodies received so far (requests and watch streams): what the hook's start costs the API server. */
  readonly stats: { bytesReceived: number };
  request<T>(req: ApiRequest): Promise<T>;
  /** Opens a streaming GET (watch); resolves once a 200 response has started. */
  openStream(req: StreamRequest): Promise<http.IncomingMessage>;

  getPod(ns: string, name: string, opts?: RequestOptions): Promise<Pod>;
  getConfigMap(ns: string, name: string, opts?: RequestOptions): Promise<ConfigMap>;
  /** Metadata only (PartialObjectMetadataList): no `data`, so the size does not grow with the namespace. */
  listConfigMapsMetadata(ns: string, opts?: ListOptions): Promise<List<ConfigMap>>;
  /** Deletes only the object these preconditions describe; 409 when it changed or was re-created. */
  deleteConfigMap(ns: string, name: string, preconditions: Preconditions, opts?: RequestOptions): Promise<void>;
  getLease(ns: string, name: string, opts?: RequestOptions): Promise<Lease>;
  listLeases(ns: string, opts?: ListOptions): Promise<List<Lease>>;
  /** PUT: the API rejects it with 409 unless metadata.resourceVersion is still current. */
  updateLease(ns: string, lease: Lease, opts?: RequestOptions): Promise<Lease>;
  createEvent(ns: string, event: KubeEvent, opts?: RequestOptions): Promise<KubeEvent>;
  createSelfSubjectAccessReview(review: SelfSubjectAccessReview, opts?: RequestOptions): Promise<SelfSubjectAccessReview>;
  /** Closes idle keep-alive sockets. */
  close(): void;
}

const defaultTimeoutMs = 10_000;
const maxErrorBody = 64 * 1024;

function buildPath(path: string, query: ApiRequest['query']): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
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

/** One keep-alive agent with the cluster's CA and, when configured, the client certificate. */
function agentOptions(config: ClusterConfig): https.AgentOptions {
  const options: https.AgentOptions = { keepAlive: true, keepAliveMsecs: 30_000, maxFreeSockets: 4 };
  if (config.ca) options.ca = config.ca;
  if (config.cert) options.cert = config.cert;
  if (config.key) options.key = config.key;
  if (config.servername) options.servername = config.servername;
  if (config.insecureSkipTlsVerify) options.rejectUnauthorized = false;
  return options;
}

/** A failure without an API answer (timeout, cancel, network), as the error that names the call. */
function transportError(method: string, path: string, err: unknown, timedOut: boolean): KubeApiError {
  if (err instanceof KubeApiError) return err;
  const e = err as NodeJS.ErrnoException;
  if (timedOut) return new KubeApiError({ method, path, status: 0, reason: 'Timeout', detail: 'no answer in time', cause: err });
  if (e?.name === 'AbortError') return new KubeApiError({ method, path, status: 0, reason: 'Aborted', detail: 'request cancelled', cause: err });
  return new KubeApiError({ method, path, status: 0, reason: 'NetworkError', detail: `${e?.code ?? ''} ${e?.message ?? String(err)}`.trim(), cause: err });
}

/**
 * A Kubernetes API client over Node's own http(s): one keep-alive agent, the
 * cluster CA, a bearer token (re-read when rotated, and once more after a
 * 401) or a client certificate. It returns the API's JSON as is and maps
 * every failure to a KubeApiError that names the call.
 */
export function createKubeClient(config: ClusterConfig): KubeClient {
  const secure = config.server.protocol === 'https:';
  if (!secure && config.server.protocol !== 'http:') {
    throw new UserFacingError(`API server ${config.server.href} (${config.source}): only https:// and http:// are supported`);
  }
  // node:http is loaded only for a plain-http server (tests, a local proxy):
  // importing it costs the hook ~3 MiB even though node:https is loaded anyway.
  const transport: typeof https | typeof http = secure ? https : process.getBuiltinModule('node:http');
  const agent = new transport.Agent(agentOptions(config));
  const basePath = config.server.pathname.replace(/\/$/, '');
  const userAgent = `leaderhook/${version}`;
  const stats = { bytesReceived: 0 };

  /** Everything a request to the server needs: where, how, as whom (the token as it is now). */
  function requestOptions(method: string, path: string, body: string | undefined, accept = 'application/json', signal?: AbortSignal): http.RequestOptions {
    const headers: http.OutgoingHttpHeaders = { Accept: accept, 'User-Agent': userAgent };
    const token = config.token?.get();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    return {
      protocol: config.server.protocol,
      hostname: config.server.hostname.replace(/^\[|\]$/g, ''),
      port: config.server.port || (secure ? 443 : 80),
      path: basePath + path,
      method,
      agent,
      headers,
      ...(signal ? { signal } : {}),
    };
  }

  /**
   * A 401 with a token file usually means the kubelet rotated the token since
   * it was last read: re-read it and try once more.
   */
  async function withFreshToken<T>(attempt: () => Promise<T>): Promise<T> {
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 401 && config.token) {
        config.token.invalidate();
        return attempt();
      }
      throw err;
    }
  }

  function once<T>(req: ApiRequest): Promise<T> {
    const path = buildPath(req.path, req.query);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const timeout = AbortSignal.timeout(req.timeoutMs ?? defaultTimeoutMs);
    const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
    return new Promise<T>((resolvePromise, reject) => {
      if (signal.aborted) {
        reject(transportError(req.method, path, signal.reason, timeout.aborted));
        return;
      }
      const r = transport.request(requestOptions(req.method, path, body, req.accept, signal), (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          stats.bytesReceived += c.length;
          if ((res.statusCode ?? 0) < 400 || size <= maxErrorBody) chunks.push(c);
        });
        res.on('error', (err) => reject(transportError(req.method, path, err, timeout.aborted)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status >= 400) {
            reject(errorFromResponse(req.method, path, status, text));
            return;
          }
          if (!text) {
            resolvePromise(undefined as T);
            return;
          }
          try {
            resolvePromise(JSON.parse(text) as T);
          } catch (err) {
            reject(
              new KubeApiError({ method: req.method, path, status, reason: 'InvalidResponse', detail: `response is not JSON: ${(err as Error).message}` }),
            );
          }
        });
      });
      r.on('error', (err) => reject(transportError(req.method, path, err, timeout.aborted)));
      if (body !== undefined) r.write(body);
      r.end();
    });
  }

  const request = <T>(req: ApiRequest): Promise<T> => withFreshToken(() => once<T>(req));

  function openStreamOnce(req: StreamRequest): Promise<http.IncomingMessage> {
    const path = buildPath(req.path, req.query);
    const connect = AbortSignal.timeout(req.connectTimeoutMs ?? defaultTimeoutMs);
    return new Promise((resolvePromise, reject) => {
      const r = transport.request(requestOptions('GET', path, undefined, req.accept, req.signal), (res) => {
        connect.removeEventListener('abort', onConnectTimeout);
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => reject(errorFromResponse('GET', path, status, Buffer.concat(chunks).toString('utf8'))));
          res.on('error', (err) => reject(transportError('GET', path, err, false)));
          return;
        }
        resolvePromise(res);
      });
      const onConnectTimeout = () => r.destroy(new KubeApiError({ method: 'GET', path, status: 0, reason: 'Timeout', detail: 'no response headers in time' }));
      connect.addEventListener('abort', onConnectTimeout, { once: true });
      r.setTimeout(req.idleTimeoutMs, () =>
        r.destroy(new KubeApiError({ method: 'GET', path, status: 0, reason: 'Timeout', detail: `stream silent for ${req.idleTimeoutMs} ms` })),
      );
      r.on('error', (err) => {
        connect.removeEventListener('abort', onConnectTimeout);
        reject(transportError('GET', path, err, false));
      });
      r.end();
    });
  }

  const openStream = (req: StreamRequest): Promise<http.IncomingMessage> => withFreshToken(() => openStreamOnce(req));

  return {
    config,
    stats,
    request,
    openStream,
    getPod: (ns, name, opts) => request<Pod>({ method: 'GET', path: paths.pod(ns, name), ...opts }),
    getConfigMap: (ns, name, opts) => request<ConfigMap>({ method: 'GET', path: paths.configMap(ns, name), ...opts }),
    listConfigMapsMetadata: (ns, opts) =>
      request<List<ConfigMap>>({ method: 'GET', path: paths.configMaps(ns), query: listQuery(opts), accept: metadataAccept.list, ...pickRequest(opts) }),
    deleteConfigMap: async (ns, name, preconditions, opts) => {
      await request<unknown>({
        method: 'DELETE',
        path: paths.configMap(ns, name),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions },
        ...opts,
      });
    },
    getLease: (ns, name, opts) => request<Lease>({ method: 'GET', path: paths.lease(ns, name), ...opts }),
    listLeases: (ns, opts) => request<List<Lease>>({ method: 'GET', path: paths.leases(ns), query: listQuery(opts), ...pickRequest(opts) }),
    updateLease: (ns, lease, opts) => {
      const name = lease.metadata?.name;
      if (!name) return Promise.reject(new Error(`updating a Lease in ${ns}: metadata.name is empty`));
      return request<Lease>({ method: 'PUT', path: paths.lease(ns, name), body: lease, ...opts });
    },
    createEvent: (ns, event, opts) => request<KubeEvent>({ method: 'POST', path: paths.events(ns), body: event, ...opts }),
    createSelfSubjectAccessReview: (review, opts) =>
      request<SelfSubjectAccessReview>({ method: 'POST', path: paths.selfSubjectAccessReviews(), body: review, ...opts }),
    close: () => agent.destroy(),
  };
}

function pickRequest(opts: ListOptions | undefined): RequestOptions {
  const out: RequestOptions = {};
  if (opts?.timeoutMs !== undefined) out.timeoutMs = opts.timeoutMs;
  if (opts?.signal) out.signal = opts.signal;
  return out;
}
