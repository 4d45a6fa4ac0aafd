/**
 * Readiness and shutdown: /readyz before a certificate and while closing,
 * and close() finishing a request that is in flight.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { createWebhookApp } from '../../../src/webhook/app.ts';
import { createWebhookMetrics } from '../../../src/webhook/metrics.ts';
import { memoryLogger, readTestdata, send, settings, startTestServer } from './support.ts';

describe('readiness', () => {
  it('is 503 until a certificate is loaded, then 200, while healthz is always 200', async () => {
    let reason: string | undefined = 'no serving certificate loaded yet';
    const { logger } = memoryLogger();
    const app = createWebhookApp({
      inject: () => {
        throw new Error('not called');
      },
      injection: settings,
      logger,
      metrics: createWebhookMetrics(),
      bodyLimitBytes: 1024,
      notReadyReason: () => reason,
    });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const before = await fetch(`${base}/readyz`);
      assert.equal(before.status, 503);
      assert.match(await before.text(), /not ready: no serving certificate loaded yet/);
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      reason = undefined;
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('is 503 once shutting down, with Connection: close on every answer', async () => {
    const server = await startTestServer({ shutdownDelayMs: 400 });
    const agent = new Agent({ keepAlive: true, ca: server.ca });
    const ready = await server.request('/readyz', { agent });
    assert.equal(ready.status, 200);
    assert.equal(ready.headers.connection, 'keep-alive');
    const closed = server.cleanup();
    const during = await server.request('/readyz', { agent });
    assert.equal(during.status, 503);
    assert.match(during.body, /shutting down/);
    assert.equal(during.headers.connection, 'close');
    await closed;
    agent.destroy();
  });
});

describe('close()', () => {
  it('finishes an in-flight admission, refuses new connections, then resolves', async () => {
    const server = await startTestServer();
    const body = Buffer.from(await readTestdata('kubebuilder-pod.review.json'));
    const half = Math.floor(body.length / 2);

    // Headers and half the body are on the wire when close() is called.
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        `${server.webhook.url}/mutate`,
        {
          method: 'POST',
          ca: server.ca,
          agent: false,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.write(body.subarray(0, half));
      setTimeout(() => {
        closing = server.webhook.close().then(() => {
          closedAt = Date.now();
        });
        setTimeout(() => {
          finishedAt = Date.now();
          req.end(body.subarray(half));
        }, 300);
      }, 100);
    });
    let closing: Promise<void> | undefined;
    let closedAt = 0;
    let finishedAt = 0;

    await new Promise((resolve) => setTimeout(resolve, 200));
    await assert.rejects(send(`${server.webhook.url}/healthz`, server.ca), { code: 'ECONNREFUSED' });

    const result = await answer;
    assert.equal(result.status, 200);
    assert.equal(JSON.parse(result.body).response.uid, '0df28fbd-5f5f-4b3b-a3f4-6ee7f2bd4d47');
    await closing;
    assert.ok(finishedAt > 0 && closedAt >= finishedAt, 'close() resolved only after the in-flight request was answered');
    await server.cleanup();
  });

  it('cuts requests still open at the shutdown deadline', async () => {
    const server = await startTestServer({ shutdownTimeoutMs: 300 });
    const stalled = new Promise<string>((resolve) => {
      const req = httpsRequest(`${server.webhook.url}/mutate`, {
        method: 'POST',
        ca: server.ca,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': 1000 },
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      req.write('{"apiVersion":');
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await server.webhook.close();
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 250 && elapsed < 2000, `closed after ${elapsed} ms`);
    assert.equal(await stalled, 'ECONNRESET');
    assert.ok(server.lines.some((l) => l.msg === 'requests still open at the shutdown deadline, closing their connections'));
    await server.cleanup();
  });
});
