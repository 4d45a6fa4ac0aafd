/**
 * The benchmark's load client against a server that closes keep-alive
 * connections left idle, as Node's does after its request timeout: an open
 * loop at a low rate leaves most of its pool idle, and must answer every
 * request due all the same, on connections it opens again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type ServerOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { ensureDevCertificates } from '../../src/webhook/devcerts.ts';
import { closedLoop, mutateRequest, openLoop } from '../bench/webhook-client.ts';

const dir = mkdtempSync(join(tmpdir(), 'leaderhook-webhook-client-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A TLS server on loopback that answers each request after `delayMs(ms since
 * the load started)` and counts the connections it accepted; `startLoad()`
 * marks the start and sets the count to 0.
 */
async function delayingServer(options: ServerOptions, delayMs: (sinceStartMs: number) => number) {
  await ensureDevCertificates(dir, pino({ level: 'silent' }), ['127.0.0.1']);
  let started = performance.now();
  let connections = 0;
  const server = createServer({ cert: readFileSync(join(dir, 'tls.crt')), key: readFileSync(join(dir, 'tls.key')), ...options }, (req, res) => {
    const delay = delayMs(performance.now() - started);
    req.resume();
    req.on('end', () => setTimeout(() => res.end('{}'), delay));
  });
  let onClose = () => {};
  server.on('secureConnection', (socket) => {
    connections += 1;
    socket.on('close', () => onClose());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    target: { port: (server.address() as { port: number }).port, ca: readFileSync(join(dir, 'ca.crt')) },
    get connections() {
      return connections;
    },
    /** Called when a connection closes, whichever side closed it. */
    set onClose(callback: () => void) {
      onClose = callback;
    },
    startLoad() {
      started = performance.now();
      connections = 0;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test('an open loop opens a new connection in place of one the server closed while idle, and loses no request', async (t) => {
  const server = await delayingServer(
    // a connection that never sent a request is answered 408 and closed after 0.5 s, one idle after its last answer
    // is closed after 0.3 s
    { headersTimeout: 500, keepAliveTimeout: 300, requestTimeout: 500, connectionsCheckingInterval: 50 },
    // two requests in flight in the first second, one at a time in the next, six at a time after: the connections of
    // the first second and those never used are closed by then, and the client needs them again
    (sinceStart) => (sinceStart < 1000 ? 100 : sinceStart < 2000 ? 0 : 300),
  );
  t.after(() => server.close());
  server.startLoad();
  const load = await openLoop(server.target, mutateRequest(Buffer.from('{}')), 20, 3.5, 8);
  assert.equal(load.failed, 0, 'no request failed on a closed connection');
  assert.deepEqual(load.failures, {});
  assert.equal(load.notOk, 0);
  assert.equal(load.count, 70, 'every request due was answered');
  assert.ok(server.connections > 8, `the server closed idle connections and the client opened others (${server.connections} connections for a pool of 8)`);
});

test('an open loop closes a connection idle for its idle timeout and opens another, before the server would close it', async (t) => {
  const server = await delayingServer(
    // the server keeps idle connections far longer than the run: any new connection is the client's doing
    { keepAliveTimeout: 60_000 },
    // one request at a time for the first second (the pool's other connections sit idle), six at a time after
    (sinceStart) => (sinceStart < 1000 ? 0 : 300),
  );
  t.after(() => server.close());
  server.startLoad();
  const load = await openLoop(server.target, mutateRequest(Buffer.from('{}')), 20, 2, 8, { idleTimeoutMs: 500 });
  assert.deepEqual(load.failures, {});
  assert.equal(load.count, 40, 'every request due was answered');
  assert.ok(server.connections > 8, `the client closed connections idle for 0.5 s and opened others (${server.connections} connections for a pool of 8)`);

  // the same load with the default idle timeout (90 s) keeps its pool
  server.startLoad();
  const kept = await openLoop(server.target, mutateRequest(Buffer.from('{}')), 20, 2, 8);
  assert.equal(kept.count, 40);
  assert.equal(server.connections, 8, 'no connection was idle for 90 s: the pool is the one opened');
});

test('a request the server drops is counted as failed with the error it met', async () => {
  await ensureDevCertificates(dir, pino({ level: 'silent' }), ['127.0.0.1']);
  let answered = 0;
  const server = createServer({ cert: readFileSync(join(dir, 'tls.crt')), key: readFileSync(join(dir, 'tls.key')) }, (req, res) => {
    req.resume();
    // the third request of a connection is dropped: the socket closed with no answer
    req.on('end', () => (++answered % 3 === 0 ? req.socket.destroy() : res.end('{}')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    const load = await closedLoop({ port, ca: readFileSync(join(dir, 'ca.crt')) }, mutateRequest(Buffer.from('{}')), 1, 2);
    assert.equal(load.count, 2, 'the two answers before the drop');
    assert.equal(load.failed, 1);
    assert.deepEqual(load.failures, { 'connection closed by the server (idle 0 s before the request)': 1 });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('an open loop replaces a connection a request failed on, so the pool does not shrink with each failure', async () => {
  await ensureDevCertificates(dir, pino({ level: 'silent' }), ['127.0.0.1']);
  const served = new WeakMap<object, number>();
  const server = createServer({ cert: readFileSync(join(dir, 'tls.crt')), key: readFileSync(join(dir, 'tls.key')) }, (req, res) => {
    req.resume();
    // each connection's third request is dropped: the socket closed with no answer
    req.on('end', () => {
      const n = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, n);
      if (n === 3) req.socket.destroy();
      else res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    // 30 requests on a pool of one connection: every third fails, the rest are answered on the connections opened in its place
    const load = await openLoop({ port, ca: readFileSync(join(dir, 'ca.crt')) }, mutateRequest(Buffer.from('{}')), 20, 1.5, 1);
    assert.deepEqual(load.failures, { 'connection closed by the server (idle 0 s before the request)': 10 });
    assert.equal(load.failed, 10, 'the sum of the failures');
    assert.equal(load.count, 20);
    assert.equal(load.unsent, 0, 'no request left waiting for a connection the pool lost');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a connection the server closes while idle, after its last answer, fails no request', async () => {
  await ensureDevCertificates(dir, pino({ level: 'silent' }), ['127.0.0.1']);
  const server = createServer({ cert: readFileSync(join(dir, 'tls.crt')), key: readFileSync(join(dir, 'tls.key')) }, (req, res) => {
    req.resume();
    // answered, then closed 50 ms later as a keep-alive timeout closes it: before the next request is due
    req.on('end', () => res.end('{}', () => setTimeout(() => req.socket.destroy(), 50)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    // one request every 200 ms on a pool of one: each finds its connection closed and opens another
    const load = await openLoop({ port, ca: readFileSync(join(dir, 'ca.crt')) }, mutateRequest(Buffer.from('{}')), 5, 1.2, 1);
    assert.deepEqual(load.failures, {}, 'an idle close counted as a failed request');
    assert.equal(load.count, 6, 'every request due was answered');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('an open loop closes its idle connections by a timer, also those no request takes', async (t) => {
  const server = await delayingServer({ keepAliveTimeout: 60_000 }, () => 0);
  const closedAt: number[] = [];
  const started = performance.now();
  t.after(() => server.close());
  server.startLoad();
  server.onClose = () => closedAt.push(performance.now() - started);
  // one request at a time: the connection last answered is taken again and the pool's other 7 are never taken
  const load = await openLoop(server.target, mutateRequest(Buffer.from('{}')), 10, 2.5, 8, { idleTimeoutMs: 500 });
  assert.equal(load.count, 25);
  const beforeEnd = closedAt.filter((at) => at < 2000);
  assert.ok(beforeEnd.length >= 7, `the client closed the 7 connections idle since opening within the run (${beforeEnd.length} closed before 2 s)`);
});
