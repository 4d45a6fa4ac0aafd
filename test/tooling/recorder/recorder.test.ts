/**
 * The recorder against the fake API server of test/support/fake-api-server.ts
 * (no cluster), scripted per case: a watch that the server closes, answers
 * with HTTP 500, and ends with 410 Gone is resumed, retried and relisted,
 * losing nothing it could have seen and marking what it could not; and a
 * container's log is read run by run, attributed to the run it came from.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createCertificateAuthority, issueServingCertificate } from '../../../src/webhook/devcerts.ts';
import { type Answer, type FakeApiServer, type FakeRequest, json, openWatch, startFakeApiServer, watchEvent } from '../../support/fake-api-server.ts';
import { connectTestCluster } from '../../support/kube.ts';
import { startRecording } from '../../support/recorder.ts';
import { waitFor } from '../../support/wait.ts';

const NS = 'rec';
const lock = { kind: 'ConfigMap' as const, name: 'lfl-operator-lock', heartbeat: 'lfl-operator-lock-heartbeat' };

/** What scripted answers are queued under: `list <resource>`, `watch <resource>`, or `log <container> current|previous`. */
function scriptKey(request: FakeRequest): string {
  if (request.path.endsWith('/log')) return `log ${request.query.get('container')} ${request.query.get('previous') === 'true' ? 'previous' : 'current'}`;
  return `${request.watch ? 'watch' : 'list'} ${request.path.split('/').filter(Boolean).at(-1)}`;
}

/** A request nothing was scripted for: a list is empty; a watch (or log) is open and silent until closed. */
function unscripted(request: FakeRequest, response: ServerResponse): true {
  if (!request.watch && !request.path.endsWith('/log')) return json(response, 200, { metadata: { resourceVersion: '10' }, items: [] });
  return openWatch(response);
}

/** The resourceVersions the watches of `resource` started from, in order. */
function watchedFrom(api: FakeApiServer, resource: string): (string | null)[] {
  return api.requests.filter((request) => request.watch && request.path.endsWith(`/${resource}`)).map((request) => request.query.get('resourceVersion'));
}

/** A watch response: these events, then the stream ends (or stays open). */
function events(list: { type: string; object: unknown }[], end = true): Answer {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    for (const event of list) watchEvent(response, event.type, event.object);
    if (end) response.end();
  };
}

/** A log response: these lines, then the stream ends. */
function logLines(lines: string[]): Answer {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(lines.map((line) => `${line}\n`).join(''));
  };
}

const heartbeat = (rv: string, seq: number) => ({
  metadata: { name: lock.heartbeat, namespace: NS, resourceVersion: rv },
  data: { holder: 'op-0', seq: String(seq), time: '2026-12-03T10:15:00Z', podUID: 'uid-1', processID: 'p1', lockIdentity: 'uid-1' },
});
const lockObject = (rv: string) => ({
  metadata: { name: lock.name, namespace: NS, resourceVersion: rv, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-1' }] },
});
const line = (processID: string, msg: string, second: number) =>
  JSON.stringify({ ts: `2026-12-03T10:15:${String(second).padStart(2, '0')}.000000001Z`, msg, processID });

function pod(uid: string, rv: string, status: Record<string, unknown>): V1Pod {
  return {
    metadata: { name: 'op-0', namespace: NS, uid, resourceVersion: rv },
    status: { containerStatuses: [{ name: 'operator', image: 'op', imageID: '', ready: true, restartCount: 0, ...status }] },
  };
}

function until(description: string, check: () => boolean, timeoutMs = 10_000): Promise<true> {
  return waitFor(description, async () => check(), timeoutMs, 20);
}

describe('recorder against a scripted API server', () => {
  let api: FakeApiServer;
  let dir: string;

  before(async () => {
    const ca = await createCertificateAuthority('recorder test CA');
    const serving = await issueServingCertificate(ca, ['127.0.0.1']);
    api = await startFakeApiServer({ tls: serving, key: scriptKey, answer: unscripted });
    dir = mkdtempSync(join(tmpdir(), 'leaderhook-recorder-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'scripted', cluster: { server: api.url, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } }],
        users: [{ name: 'test', user: { token: 'test' } }],
        contexts: [{ name: 'scripted', context: { cluster: 'scripted', user: 'test' } }],
        'current-context': 'scripted',
      }),
    );
    connectTestCluster(kubeconfig);
  });

  after(() => {
    api.closeAll();
    api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a watch closed, failed and expired (410 Gone) resumes, retries and relists: every event once, the unseen stretch marked', async () => {
    api.script(
      'watch configmaps',
      // Events, then the server closes the stream (its timeout): resume at rv 12.
      events([
        { type: 'ADDED', object: heartbeat('11', 1) },
        { type: 'MODIFIED', object: heartbeat('12', 2) },
      ]),
      // The API server is down for a moment: retried at rv 12.
      (_request, response) => json(response, 500, { kind: 'Status', code: 500, message: 'etcd unavailable' }),
      // rv 12 was compacted: 410 Gone in the stream; list again.
      events([{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 12 (30)' } }]),
      // Watched on from the list's revision.
      events([{ type: 'MODIFIED', object: heartbeat('32', 5) }], false),
    );
    api.script(
      'list configmaps',
      (_request, response) => json(response, 200, { metadata: { resourceVersion: '10' }, items: [] }),
      (_request, response) => json(response, 200, { metadata: { resourceVersion: '31' }, items: [heartbeat('30', 4), lockObject('25')] }),
    );
    const recording = await startRecording(NS, [], [lock]);
    try {
      await until('the event after the relist', () => recording.configMaps.some((event) => event.rv === 32n));
      assert.deepEqual(
        recording.configMaps.map((event) => [event.type, event.object.metadata?.name, event.rv, event.relisted ?? false]),
        [
          ['ADDED', lock.heartbeat, 11n, false],
          ['MODIFIED', lock.heartbeat, 12n, false],
          ['ADDED', lock.name, 25n, true],
          ['MODIFIED', lock.heartbeat, 30n, true],
          ['MODIFIED', lock.heartbeat, 32n, false],
        ],
      );
      assert.deepEqual(watchedFrom(api, 'configmaps'), ['10', '12', '12', '31']);
      assert.equal(recording.interruptions.length, 2, recording.interruptions.join('\n'));
      assert.match(recording.interruptions[0] ?? '', /configmaps: HTTP 500 Internal Server Error; resumed at rv 12/);
      assert.match(recording.interruptions[1] ?? '', /configmaps at rv 12: 410 Expired.*listed again/);
      assert.deepEqual(recording.errors, []);
    } finally {
      await recording.stop();
    }
  });

  test("a container's log is read run by run: each line attributed to its run, a line of the next run's process left out", async () => {
    const first = pod('uid-1', '40', { state: { running: {} }, containerID: 'containerd://a' });
    const restarted = pod('uid-1', '41', {
      state: { running: {} },
      containerID: 'containerd://b',
      restartCount: 1,
      lastState: { terminated: { exitCode: 1, containerID: 'containerd://a' } },
    });
    const successor = pod('uid-2', '43', { state: { running: {} }, containerID: 'containerd://c' });
    api.script('watch pods', events([{ type: 'ADDED', object: first }], false));
    // Run 0, followed: two lines, then it crashes; the stream reaches a line of the next run's process.
    api.script('log operator current', logLines([line('p1', 'trying', 1), line('p1', 'became leader', 2), line('p2', 'trying', 9)]));
    const recording = await startRecording(NS, ['operator'], [lock]);
    try {
      await until('run 0 followed', () => recording.logs.length >= 2);
      // The kubelet restarts the container: run 0's log is now the previous one, run 1's the current one.
      api.script('log operator previous', logLines([line('p1', 'trying', 1), line('p1', 'became leader', 2), line('p1', 'crashing', 8)]));
      api.script('log operator current', logLines([line('p2', 'trying', 9)]));
      api.script('watch pods', events([{ type: 'MODIFIED', object: restarted }], false));
      api.closeAll();
      await until(
        'run 0 read to its end, run 1 followed',
        () => recording.logs.some((l) => l.msg === 'crashing') && recording.logs.some((l) => l.restartCount === 1),
      );
      // The pod is replaced by another of the same name (a StatefulSet): its log is a run of its own.
      api.script('log operator current', logLines([line('p3', 'trying', 20)]));
      api.script(
        'watch pods',
        events(
          [
            { type: 'DELETED', object: restarted },
            { type: 'ADDED', object: successor },
          ],
          false,
        ),
      );
      api.closeAll();
      await until('the successor followed', () => recording.logs.some((l) => l.podUID === 'uid-2'));
      const byRun = recording.logs.map((l) => `${l.podUID}/${l.restartCount} ${l.fields.processID} ${l.msg}`);
      assert.deepEqual(
        [...new Set(byRun)].sort(),
        ['uid-1/0 p1 became leader', 'uid-1/0 p1 crashing', 'uid-1/0 p1 trying', 'uid-1/1 p2 trying', 'uid-2/0 p3 trying'],
        byRun.join('\n'),
      );
      assert.equal(byRun.length, new Set(byRun).size, 'no line twice');
      assert.ok(
        recording.interruptions.some((text) => /run 0: 1 lines of another process than p1 left out/.test(text)),
        recording.interruptions.join('\n'),
      );
    } finally {
      await recording.stop();
    }
  });

  test("kopf's KopfPeering objects are watched only when asked for: a cluster without kopf's CRDs has none", async () => {
    const peering = (rv: string, status: Record<string, unknown>) => ({ metadata: { name: 'kopf-operator', namespace: NS, resourceVersion: rv }, status });
    api.script(
      'watch kopfpeerings',
      events(
        [
          { type: 'ADDED', object: peering('50', {}) },
          { type: 'MODIFIED', object: peering('51', { 'uid-1': { priority: 100 } }) },
        ],
        false,
      ),
    );
    const peeringRequests = () => api.requests.filter((request) => request.path.endsWith('/kopfpeerings')).length;
    const earlier = api.requests.length;
    const plain = await startRecording(NS, [], [lock]);
    try {
      await until('the plain recording to watch its four collections', () => api.requests.slice(earlier).filter((request) => request.watch).length >= 4);
      assert.equal(peeringRequests(), 0);
      assert.deepEqual(plain.kopfPeerings, []);
    } finally {
      await plain.stop();
    }
    const recording = await startRecording(NS, [], [lock], { kopfPeerings: true });
    try {
      await until('both writes of the peering', () => recording.kopfPeerings.length === 2);
      assert.deepEqual(
        recording.kopfPeerings.map((event) => [event.type, event.rv, event.relisted ?? false]),
        [
          ['ADDED', 50n, false],
          ['MODIFIED', 51n, false],
        ],
      );
      assert.equal(api.requests.find((request) => request.path.endsWith('/kopfpeerings'))?.path, `/apis/kopf.dev/v1/namespaces/${NS}/kopfpeerings`);
    } finally {
      await recording.stop();
    }
  });
});
