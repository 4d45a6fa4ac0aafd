/**
 * What the webhook tests share: a server on 127.0.0.1 port 0 with
 * development certificates in a temporary directory, a logger that keeps its
 * lines, and an HTTPS client that trusts only the test CA and reports which
 * certificate the server presented.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { type Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from '../../../src/log.ts';
import { goldenSettings } from '../../support/injection-settings.ts';
import { type RunningWebhook, startWebhookServer, type WebhookServerOptions } from '../../../src/webhook/server.ts';

export const testdata = new URL('../../testdata/admission/', import.meta.url);

export function readTestdata(name: string): Promise<string> {
  return readFile(new URL(name, testdata), 'utf8');
}

/** The injection settings of the golden files: the webhook tests inject exactly as they do. */
export const settings = goldenSettings;

export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

export function memoryLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'debug', base: { component: 'webhook' }, formatters: { level: (label) => ({ level: label }) } },
    { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  );
  return { logger, lines };
}

export interface TestServer {
  webhook: RunningWebhook;
  dir: string;
  ca: string;
  lines: LogLine[];
  request(path: string, init?: RequestInit): Promise<HttpResult>;
  cleanup(): Promise<void>;
}

export async function startTestServer(overrides: Partial<WebhookServerOptions> = {}): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'leaderhook-webhook-'));
  const { logger, lines } = memoryLogger();
  const webhook = await startWebhookServer({
    host: '127.0.0.1',
    port: 0,
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    dev: true,
    certsDir: dir,
    injection: settings,
    bodyLimitBytes: 64 * 1024,
    logger,
    certPollIntervalMs: 0,
    ...overrides,
  });
  const ca = await readFile(join(dir, 'ca.crt'), 'utf8');
  return {
    webhook,
    dir,
    ca,
    lines,
    request: (path, init) => send(`${webhook.url}${path}`, ca, init),
    cleanup: async () => {
      await webhook.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RequestInit {
  method?: string;
  headers?: Record<string, string | number>;
  body?: string | Buffer;
  /** A keep-alive agent, to see what a client that reuses connections gets; a new connection otherwise. */
  agent?: Agent;
}

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Serial number of the certificate the server presented on this connection. */
  serialNumber: string;
}

/**
 * One request on a new TLS connection (no agent, no session reuse), so a
 * reloaded certificate shows up on the very next call.
 */
export function send(url: string, ca: string, init: RequestInit = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method: init.method ?? 'GET', headers: init.headers, ca, agent: init.agent ?? false }, (res) => {
      const serialNumber = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().serialNumber;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), serialNumber }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

export function postJson(server: TestServer, body: string | Buffer, headers: Record<string, string | number> = {}): Promise<HttpResult> {
  return server.request('/mutate', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
    body,
  });
}

/** Polls until `check` passes or `timeoutMs` runs out; returns the last value. */
export async function eventually<T>(probe: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((done) => setTimeout(done, 50));
  }
}
