/**
 * The connection to the API server over Node's own http(s): one keep-alive
 * agent, the cluster CA, a bearer token (re-read when rotated, and once more
 * after a 401) or a client certificate. It returns the API's JSON as is and
 * maps every failure to a KubeApiError that names the call.
 */
import type * as http from 'node:http';
import * as https from 'node:https';
import { UserFacingError } from '../user-facing-error.ts';
import { version } from '../version.ts';
import type { ApiRequest, StreamRequest } from './client.ts';
import type { ClusterConfig } from './config.ts';
import { errorFromResponse, KubeApiError } from './errors.ts';

const defaultTimeoutMs = 10_000;
const maxErrorBody = 64 * 1024;

function buildPath(path: string, query: ApiRequest['query']): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
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

export class HttpTransport {
  readonly #config: ClusterConfig;
  readonly #transport: typeof https | typeof http;
  readonly #agent: https.Agent | http.Agent;
  readonly #basePath: string;
  /** Bytes of response bodies received so far (requests and watch streams). */
  readonly stats = { bytesReceived: 0 };

  constructor(config: ClusterConfig) {
    const secure = config.server.protocol === 'https:';
    if (!secure && config.server.protocol !== 'http:') {
      throw new UserFacingError(`API server ${config.server.href} (${config.source}): only https:// and http:// are supported`);
    }
    this.#config = config;
    // node:http is loaded only for a plain-http server (tests, a local proxy):
    // importing it costs the hook ~3 MiB even though node:https is loaded anyway.
    this.#transport = secure ? https : process.getBuiltinModule('node:http');
    this.#agent = new this.#transport.Agent(agentOptions(config));
    this.#basePath = config.server.pathname.replace(/\/$/, '');
  }

  request<T>(req: ApiRequest): Promise<T> {
    return this.#withFreshToken(() => this.#once<T>(req));
  }

  /** Opens a streaming GET (watch); resolves once a 200 response has started. */
  openStream(req: StreamRequest): Promise<http.IncomingMessage> {
    return this.#withFreshToken(() => this.#openStreamOnce(req));
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.#agent.destroy();
  }

  /** Everything a request to the server needs: where, how, as whom (the token as it is now). */
  #requestOptions(
    method: string,
    path: string,
    body: string | undefined,
    accept = 'application/json',
    signal?: AbortSignal,
    contentType = 'application/json',
  ): http.RequestOptions {
    const config = this.#config;
    const headers: http.OutgoingHttpHeaders = { Accept: accept, 'User-Agent': `leaderhook/${version}` };
    const token = config.token?.get();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) {
      headers['Content-Type'] = contentType;
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    return {
      protocol: config.server.protocol,
      hostname: config.server.hostname.replace(/^\[|\]$/g, ''),
      port: config.server.port || (this.#transport === https ? 443 : 80),
      path: this.#basePath + path,
      method,
      agent: this.#agent,
      headers,
      ...(signal ? { signal } : {}),
    };
  }

  /**
   * A 401 with a token file usually means the kubelet rotated the token since
   * it was last read: re-read it and try once more.
   */
  async #withFreshToken<T>(attempt: () => Promise<T>): Promise<T> {
    const { token } = this.#config;
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 401 && token) {
        token.invalidate();
        return attempt();
      }
      throw err;
    }
  }

  #once<T>(req: ApiRequest): Promise<T> {
    const stats = this.stats;
    const path = buildPath(req.path, req.query);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const timeout = AbortSignal.timeout(req.timeoutMs ?? defaultTimeoutMs);
    const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
    return new Promise<T>((resolvePromise, reject) => {
      if (signal.aborted) {
        reject(transportError(req.method, path, signal.reason, timeout.aborted));
        return;
      }
      const r = this.#transport.request(this.#requestOptions(req.method, path, body, req.accept, signal, req.contentType), (res) => {
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

  #openStreamOnce(req: StreamRequest): Promise<http.IncomingMessage> {
    const path = buildPath(req.path, req.query);
    const connect = AbortSignal.timeout(req.connectTimeoutMs ?? defaultTimeoutMs);
    return new Promise((resolvePromise, reject) => {
      const r = this.#transport.request(this.#requestOptions('GET', path, undefined, req.accept, req.signal), (res) => {
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
}
