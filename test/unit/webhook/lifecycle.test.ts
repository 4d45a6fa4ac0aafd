/**
 * Readiness and shutdown: app.ts's /readyz answering what notReadyReason
 * says, the real server failing readiness while it shuts down, and close()
 * finishing a request that is in flight.
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
  // app.ts's contract, with notReadyReason injected: not a state of the real
  // server, which loads its certificate before it listens and so reports
  // not-ready only while shutting down (the next test).
  it('app.ts: /readyz is 503 naming the reason notReadyReason gives, 200 once it gives none; /healthz is always 200', async () => {
    let reason: string | undefined = 'a reason the test injects';
    const { logger } = memoryLogger();
    const app = createWebhookApp({
      inject: () => {
        throw new Error('not called');
      },
      workloadWarnings: () => {
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
      assert.equal(await before.text(), 'not ready: a reason the test injects\n');
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      reason = undefined;
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('the server: /readyz is 503 once shutting down, with Connection: close on every answer', async () => {
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

    const req = httpsRequest(`${server.webhook.url}/mutate`, {
      method: 'POST',
      ca: server.ca,
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': body.length },
    });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('error', reject);
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
    });
    // Headers and half the body are on the wire, and parsed, when close() is called.
    await new Promise<void>((resolve) => req.on('socket', (socket) => socket.once('secureConnect', () => resolve())));
    await new Promise<void>((resolve) => req.write(body.subarray(0, half), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 100));

    let closedAt = 0;
    const closing = server.webhook.close().then(() => {
      closedAt = Date.now();
    });
    await assert.rejects(send(`${server.webhook.url}/healthz`, server.ca), { code: 'ECONNREFUSED' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(closedAt, 0, 'close() waits for the in-flight request');

    const finishedAt = Date.now();
    req.end(body.subarray(half));
    const result = await answer;
    assert.equal(result.status, 200);
    assert.equal(JSON.parse(result.body).response.uid, '0df28fbd-5f5f-4b3b-a3f4-6ee7f2bd4d47');
    await closing;
    assert.ok(closedAt >= finishedAt, 'close() resolved after the in-flight request was answered');
    await server.cleanup();
  });

  it('cuts requests still open at the shutdown deadline', async () => {
    const server = await startTestServer({ shutdownTimeoutMs: 300 });
    const req = httpsRequest(`${server.webhook.url}/mutate`, {
      method: 'POST',
      ca: server.ca,
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': 1000 },
    });
    const stalled = new Promise<string>((resolve) => {
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    await new Promise<void>((resolve) => req.on('socket', (socket) => socket.once('secureConnect', () => resolve())));
    await new Promise<void>((resolve) => req.write('{"apiVersion":', () => resolve()));
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
