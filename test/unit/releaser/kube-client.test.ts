/**
 * The API client and the watch loop against the fake API server of
 * test/support/fake-api-server.ts, scripted for each case:
 * the failure paths a real cluster produces only by chance (410 Gone inside a
 * watch stream, a connection cut mid-stream, a rotated token, a silent peer).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createKubeClient, type KubeClient } from '../../../src/kube/client.ts';
import { kubeconfigConfig } from '../../../src/kube/config.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import { fileToken } from '../../../src/kube/token.ts';
import type { ConfigMap } from '../../../src/kube/types.ts';
import { startWatch } from '../../../src/kube/watch.ts';
import { type Answer, type FakeApiServer, json, kubeStatus, startFakeApiServer } from '../../support/fake-api-server.ts';
import { waitFor } from '../../support/wait.ts';

const silent = pino({ level: 'silent' });

const serve = (answer: Answer): Promise<FakeApiServer> => startFakeApiServer({ answer });

const cm = (name: string, rv: string): ConfigMap => ({ metadata: { name, resourceVersion: rv } });
const line = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;
const waitUntil = (what: string, check: () => boolean, ms = 5_000) => waitFor(what, async () => check(), ms, 10);

describe('kube client', () => {
  let server: FakeApiServer;
  let client: KubeClient;
  let token = 'old';
  const auth = (from: number) => server.requests.slice(from).map((request) => request.headers.authorization);

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaderhook-token-'));
    const tokenPath = join(dir, 'token');
    writeFileSync(tokenPath, 'old\n');
    server = await serve((request, res) => {
      if (request.headers.authorization !== `Bearer ${token}`) return json(res, 401, kubeStatus(401, 'Unauthorized', 'Unauthorized'));
      if (request.path.endsWith('/pods/missing')) return json(res, 404, kubeStatus(404, 'NotFound', 'pods "missing" not found'));
      if (request.path.endsWith('/pods/html')) {
        res.writeHead(502, { 'Content-Type': 'text/html' });
        res.end('<html>bad gateway</html>');
        return true;
      }
      if (request.path.endsWith('/pods/slow')) return true; // never answers
      return json(res, 200, { metadata: { name: request.path.split('/').pop() } });
    });
    client = createKubeClient({ server: new URL(server.url), token: fileToken(tokenPath), source: 'test' });
    // the kubelet rotates the token in place
    writeFileSync(tokenPath, 'new\n');
    token = 'new';
  });
  after(() => {
    client.close();
    server.close();
  });

  it('re-reads a rotated token after a 401 and retries once', async () => {
    const pod = await client.getPod('ns', 'op-0');
    assert.equal(pod.metadata?.name, 'op-0');
    assert.deepEqual(auth(-2), ['Bearer old', 'Bearer new']);
  });

  it('maps a Status to an error that names the call', async () => {
    await assert.rejects(client.getPod('ns', 'missing'), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.status, 404);
      assert.equal(err.reason, 'NotFound');
      assert.equal(err.message, 'GET /api/v1/namespaces/ns/pods/missing: 404 NotFound: pods "missing" not found');
      return true;
    });
  });

  it('keeps a non-JSON error body readable', async () => {
    await assert.rejects(client.getPod('ns', 'html'), /GET \/api\/v1\/namespaces\/ns\/pods\/html: 502 Unknown: <html>bad gateway<\/html>/);
  });

  it('times out a request that gets no answer', async () => {
    const start = Date.now();
    await assert.rejects(client.getPod('ns', 'slow', { timeoutMs: 200 }), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.reason, 'Timeout');
      assert.match(err.message, /^GET \/api\/v1\/namespaces\/ns\/pods\/slow: Timeout/);
      return true;
    });
    assert.ok(Date.now() - start < 2_000);
  });

  it('sends delete preconditions in DeleteOptions', async () => {
    await client.deleteConfigMap('ns', 'lock', { uid: 'u1', resourceVersion: '9' });
    assert.deepEqual(JSON.parse(server.requests.at(-1)?.body ?? '{}'), {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: 'u1', resourceVersion: '9' },
    });
  });

  it('opens a watch stream after re-reading a rotated token once, like a request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaderhook-token-'));
    const tokenPath = join(dir, 'token');
    writeFileSync(tokenPath, 'old\n');
    const streaming = createKubeClient({ server: new URL(server.url), token: fileToken(tokenPath), source: 'test' });
    writeFileSync(tokenPath, 'new\n');
    const before = server.requests.length;
    const res = await streaming.openStream({ path: '/api/v1/namespaces/ns/pods', query: { watch: true }, idleTimeoutMs: 5_000 });
    res.destroy();
    streaming.close();
    assert.equal(res.statusCode, 200);
    assert.deepEqual(auth(before), ['Bearer old', 'Bearer new']);
  });
});

describe('kubeconfig', () => {
  it('reads server, CA data and token; names what is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leaderhook-kubeconfig-'));
    const path = join(dir, 'config');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: a',
        'clusters:',
        '- name: c',
        '  cluster:',
        '    server: https://10.0.0.1:6443',
        `    certificate-authority-data: ${Buffer.from('CA').toString('base64')}`,
        'users:',
        '- name: u',
        '  user:',
        '    token: abc',
        'contexts:',
        '- name: a',
        '  context: {cluster: c, user: u, namespace: ops}',
        '- name: broken',
        '  context: {cluster: nope, user: u}',
      ].join('\n'),
    );
    const config = await kubeconfigConfig(path);
    assert.equal(config.server.href, 'https://10.0.0.1:6443/');
    assert.equal(config.ca?.toString(), 'CA');
    assert.equal(config.token?.get(), 'abc');
    assert.equal(config.namespace, 'ops');
    await assert.rejects(kubeconfigConfig(path, 'missing'), /kubeconfig .*: context "missing" not found/);
    await assert.rejects(kubeconfigConfig(path, 'broken'), /cluster "nope" not found/);
    await assert.rejects(kubeconfigConfig(join(dir, 'none')), /reading kubeconfig .*none: ENOENT/);
  });
});

describe('watch', () => {
  it('follows bookmarks, relists on 410 Gone, resumes after a cut connection', async () => {
    const requests: string[] = [];
    let lists = 0;
    let watches = 0;
    const server = await serve((request, res) => {
      const { watch } = request;
      requests.push(`${watch ? 'watch' : 'list'} rv=${request.query.get('resourceVersion') ?? ''}`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (!watch) {
        lists++;
        res.end(JSON.stringify({ metadata: { resourceVersion: lists === 1 ? '10' : '30' }, items: [cm(`list${lists}`, '1')] }));
        return;
      }
      watches++;
      if (watches === 1) {
        res.write(line('ADDED', cm('a', '11')));
        res.write(line('BOOKMARK', { metadata: { resourceVersion: '20' } }));
        res.end(line('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' }));
      } else if (watches === 2) {
        res.write(line('MODIFIED', cm('a', '31')));
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        res.write(line('DELETED', cm('a', '32')));
        // stays open until the watch stops
      }
    });
    const client = createKubeClient({ server: new URL(server.url), source: 'test' });
    const events: string[] = [];
    const listed: string[][] = [];
    const w = startWatch<ConfigMap>(
      { client, path: '/api/v1/namespaces/ns/configmaps', mode: 'list-watch', what: 'test', logger: silent, initialBackoffMs: 10, maxBackoffMs: 50 },
      {
        onList: (items) => listed.push(items.map((i) => i.metadata?.name as string)),
        onEvent: (type, o) => events.push(`${type} ${o.metadata?.name} ${o.metadata?.resourceVersion}`),
      },
    );
    await waitUntil('third watch', () => watches >= 3 && events.length >= 3);
    w.stop();
    await w.done;
    client.close();
    server.close();
    assert.deepEqual(listed, [['list1'], ['list2']]);
    assert.deepEqual(events, ['ADDED a 11', 'MODIFIED a 31', 'DELETED a 32']);
    assert.deepEqual(requests, ['list rv=', 'watch rv=10', 'list rv=', 'watch rv=30', 'watch rv=31']);
    assert.equal(w.synced, true);
  });

  it('keeps only the listed objects `keep` accepts, over every page', async () => {
    const server = await serve((request, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (request.watch) return; // stays open
      const second = request.query.get('continue') === 'page2';
      const items = second ? [cm('lock-b', '3'), cm('data-c', '4')] : [cm('data-a', '1'), cm('lock-a', '2')];
      res.end(JSON.stringify({ metadata: { resourceVersion: '9', ...(second ? {} : { continue: 'page2' }) }, items }));
    });
    const client = createKubeClient({ server: new URL(server.url), source: 'test' });
    const listed: string[][] = [];
    const w = startWatch<ConfigMap>(
      {
        client,
        path: '/api/v1/namespaces/ns/configmaps',
        mode: 'list-watch',
        what: 'test',
        logger: silent,
        keep: (o) => o.metadata?.name?.startsWith('lock-') === true,
      },
      { onList: (items) => listed.push(items.map((i) => i.metadata?.name as string)), onEvent: () => {} },
    );
    await waitUntil('listed', () => listed.length > 0);
    w.stop();
    await w.done;
    client.close();
    server.close();
    assert.deepEqual(listed, [['lock-a', 'lock-b']]);
  });

  it('backs off and keeps trying while the API server is down, then recovers', async () => {
    let calls = 0;
    const server = await serve((request, res) => {
      calls++;
      if (calls <= 3) return json(res, 503, kubeStatus(503, 'ServiceUnavailable', 'etcd down'));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (!request.watch) res.end(JSON.stringify({ metadata: { resourceVersion: '5' }, items: [cm('x', '5')] }));
    });
    const client = createKubeClient({ server: new URL(server.url), source: 'test' });
    let listedAt = 0;
    const start = Date.now();
    const w = startWatch<ConfigMap>(
      { client, path: '/api/v1/namespaces/ns/configmaps', mode: 'list-watch', what: 'test', logger: silent, initialBackoffMs: 40, maxBackoffMs: 200 },
      { onList: () => (listedAt = Date.now()), onEvent: () => {} },
    );
    await waitUntil('list after outage', () => listedAt > 0);
    w.stop();
    await w.done;
    client.close();
    server.close();
    // three failures: at least 20 + 40 + 80 ms of backoff (half of each ceiling)
    assert.ok(listedAt - start >= 140, `backed off (${listedAt - start} ms)`);
  });
});
