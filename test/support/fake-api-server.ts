/**
 * A Kubernetes API server played on 127.0.0.1 for the tests that need no
 * cluster: every request is recorded, then answered by what the test
 * scripted for it (answers queued per request, in order), else by the
 * test's own `answer`; a request neither answers is answered 500 and kept in
 * `unexpected`, so that a test can fail on it. Watches are responses the
 * test keeps open and writes events to. Loads no cluster client
 * (test/support/kube.ts refuses to load outside the cluster's network
 * namespace).
 */
import { createServer as createHttpServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  method: string;
  /** The path, without the query. */
  path: string;
  query: URLSearchParams;
  /** `?watch=true`. */
  watch: boolean;
  /** `METHOD /path`, with ` (watch)` appended for a watch: how tests name and count requests. */
  call: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Answers `request` on `response` (or leaves it open: a watch, a server that
 * hangs), or returns false when it has no answer for it.
 */
export type Answer = (request: FakeRequest, response: ServerResponse) => undefined | boolean | Promise<undefined | boolean>;

export interface FakeApiServerOptions {
  /** What answers a request nothing was scripted for. */
  answer?: Answer;
  /** Serve HTTPS with this certificate instead of plain HTTP. */
  tls?: { cert: string; key: string };
  /** The key scripted answers are queued under; `call` by default. */
  key?: (request: FakeRequest) => string;
}

export interface FakeApiServer {
  /** `http://127.0.0.1:<port>` (https with `tls`). */
  url: string;
  /** Every request, in arrival order. */
  requests: FakeRequest[];
  /** The `call` of every request, in arrival order. */
  calls: string[];
  /** How many requests were exactly `call`. */
  count(call: string): number;
  /** The calls nothing answered. */
  unexpected: string[];
  /** Rejects at the first unexpected request, so that a test waiting for something else fails at once instead of timing out. */
  firstUnexpected: Promise<never>;
  /** Queues `answers` for the requests of `key`, one each, after those already queued. */
  script(key: string, ...answers: Answer[]): void;
  /** Cuts every response still open (watches, logs), as an API server that restarts does. */
  closeAll(): void;
  /** Cuts every connection and stops listening. */
  close(): void;
}

/** Answers with `body` as JSON. */
export function json(response: ServerResponse, status: number, body: unknown): true {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
  return true;
}

/** The Status object an API server answers a failure with. */
export function kubeStatus(code: number, reason: string, message: string): { kind: 'Status'; code: number; reason: string; message: string } {
  return { kind: 'Status', code, reason, message };
}

/** Starts a watch response: headers sent, no event yet, open until the test ends it. */
export function openWatch(response: ServerResponse): true {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.flushHeaders();
  return true;
}

/** Writes one watch event to a watch response. */
export function watchEvent(response: ServerResponse, type: string, object: unknown): void {
  response.write(`${JSON.stringify({ type, object })}\n`);
}

export async function startFakeApiServer(options: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const requests: FakeRequest[] = [];
  const calls: string[] = [];
  const unexpected: string[] = [];
  const scripts = new Map<string, Answer[]>();
  const open = new Set<ServerResponse>();
  let rejectUnexpected!: (error: Error) => void;
  const firstUnexpected = new Promise<never>((_, reject) => (rejectUnexpected = reject));
  firstUnexpected.catch(() => {}); // only the tests that wait on it read it

  const handle = async (request: FakeRequest, response: ServerResponse): Promise<void> => {
    requests.push(request);
    calls.push(request.call);
    open.add(response);
    response.on('close', () => open.delete(response));
    const scripted = scripts.get(options.key?.(request) ?? request.call)?.shift();
    if (scripted && (await scripted(request, response)) !== false) return;
    if (options.answer && (await options.answer(request, response)) !== false) return;
    unexpected.push(request.call);
    rejectUnexpected(new Error(`the fake API was not scripted for ${request.call}`));
    json(response, 500, kubeStatus(500, 'InternalError', `the fake API was not scripted for ${request.call}`));
  };
  const server = (options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }) : createHttpServer()).on('request', (req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const watch = url.searchParams.get('watch') === 'true';
      const method = req.method ?? 'GET';
      const request: FakeRequest = {
        method,
        path: url.pathname,
        query: url.searchParams,
        watch,
        call: `${method} ${url.pathname}${watch ? ' (watch)' : ''}`,
        headers: req.headers,
        body,
      };
      // An answer that throws fails the test (an unhandled rejection), as a throwing request handler of node:http would.
      void handle(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    calls,
    count: (call) => calls.filter((c) => c === call).length,
    unexpected,
    firstUnexpected,
    script(key, ...answers) {
      scripts.set(key, [...(scripts.get(key) ?? []), ...answers]);
    },
    closeAll() {
      for (const response of open) response.destroy();
    },
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
