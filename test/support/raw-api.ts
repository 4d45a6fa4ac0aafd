/**
 * The test cluster's API as plain JSON over node:https, with the test
 * kubeconfig's credentials: what a test reads or writes keeps Kubernetes'
 * own form (times as strings, as watch events carry them), unlike
 * client-node's typed clients, which turn times into Date objects, and
 * independent of src/kube, whose client is under test.
 */
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import { kubeConfig } from './kube.ts';

/** An answer other than 2xx: the status and the server's message. */
export class ApiRequestError extends Error {
  readonly status: number;
  constructor(method: string, path: string, status: number, body: string) {
    super(`${method} ${path}: HTTP ${status}: ${body.slice(0, 300)}`);
    this.status = status;
  }
}

/**
 * Sends `method path` (with `query`, and `body` as JSON) and resolves with
 * the 2xx response, still to be read; any other status rejects with an
 * ApiRequestError carrying the server's message.
 */
export async function sendApiRequest(
  method: string,
  path: string,
  options: { query?: Record<string, string>; body?: unknown; signal?: AbortSignal } = {},
): Promise<IncomingMessage> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(`${cluster.server}${path}`);
  for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  // A length, not chunks: Node sends a DELETE's body unframed unless told its length, and the server reads none.
  const requestOptions: https.RequestOptions = {
    method,
    signal: options.signal,
    headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {},
  };
  await kubeConfig.applyToHTTPSOptions(requestOptions);
  return new Promise((resolve, reject) => {
    const request = https.request(url, requestOptions, (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        resolve(response);
        return;
      }
      readBody(response).then((body) => reject(new ApiRequestError(method, `${url.pathname}${url.search}`, status, body)), reject);
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** `method path` answered with JSON, parsed. */
export async function apiRequest<T>(method: string, path: string, body?: unknown): Promise<T> {
  return JSON.parse(await readBody(await sendApiRequest(method, path, { body }))) as T;
}

export async function readBody(response: IncomingMessage): Promise<string> {
  response.setEncoding('utf8');
  let body = '';
  for await (const chunk of response) body += chunk;
  return body;
}

/** True for an ApiRequestError with HTTP 404. */
export function isNotFoundAnswer(error: unknown): boolean {
  return error instanceof ApiRequestError && error.status === 404;
}
