/**
 * The SIGTERM path's guarantees that a healthy cluster cannot show: it ends
 * within releaseTimeoutMs when the API server stops answering, retries a
 * conflicting delete once after a re-read, and exits the decision early when
 * the own pod cannot be read. The fake API server of
 * test/support/fake-api-server.ts plays the API server; a request it was not
 * scripted for fails the test, and the tests count the requests that matter
 * (deletes, Events, live reads), as client-go's leaderelection tests count
 * gets and updates.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, afterEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createKubeClient } from '../../../src/kube/client.ts';
import type { ConfigMap, Pod } from '../../../src/kube/types.ts';
import { requiredPermissions } from '../../../src/releaser/permissions.ts';
import { runReleaser } from '../../../src/releaser/releaser.ts';
import { type FakeApiServer, type FakeRequest, json, kubeStatus, openWatch, startFakeApiServer, watchEvent } from '../../support/fake-api-server.ts';

interface Script {
  pod: () => Pod | undefined;
  /** Other pods by name (lock holders); `pod` answers for op-0. */
  pods?: Record<string, () => Pod | undefined>;
  locks: ConfigMap[];
  /** Sees every request first: returns true when it answered it (or deliberately left it hanging). */
  override?: (request: FakeRequest, response: ServerResponse) => boolean;
}

const servers: FakeApiServer[] = [];
/** Hooks started by a test; stopped after it even when it failed half-way (stop() is idempotent). */
const running: { stop(): Promise<void> }[] = [];
/** The fake APIs of the running test: after it, none may have seen a request it was not scripted for. */
const apis: FakeApiServer[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  assert.deepEqual(
    apis.splice(0).flatMap((a) => a.unexpected),
    [],
    'requests the fake API was not scripted for',
  );
});
after(() => {
  for (const s of servers) s.close();
});

/** Waits for `p`, failing as soon as any fake API of the test sees an unexpected request. */
function guarded<T>(p: Promise<T>): Promise<T> {
  return Promise.race([p, ...apis.map((a) => a.firstUnexpected)]);
}

const core = '/api/v1/namespaces/ns';
const coordination = '/apis/coordination.k8s.io/v1/namespaces/ns';
const ownPodRead = `GET ${core}/pods/op-0`;
const lockRead = `GET ${core}/configmaps/op-lock`;
const lockDelete = `DELETE ${core}/configmaps/op-lock`;
const eventPost = `POST ${core}/events`;
/** The calls after the first `call`. */
const after1st = (api: FakeApiServer, call: string) => api.calls.slice(api.calls.indexOf(call) + 1);

/**
 * Plays the API server for the hook of pod op-0 in namespace ns: the routes
 * it answers are exactly what the hook is expected to ask (own pod and
 * scripted pods, the scripted locks, lists, watches, Events, access
 * reviews). Anything else is answered 500 and recorded as unexpected.
 */
async function fakeApi(script: Script): Promise<FakeApiServer> {
  const api = await startFakeApiServer({ answer: (request, response) => script.override?.(request, response) || route(script, request, response) });
  servers.push(api);
  apis.push(api);
  return api;
}

/** The answers of fakeApi's routes; false for a request they do not cover. */
function route(script: Script, request: FakeRequest, response: ServerResponse): boolean {
  const { method, path } = request;
  /** The object name when `path` is `collection/name`. */
  const item = (collection: string) =>
    path.startsWith(`${collection}/`) && !path.slice(collection.length + 1).includes('/') ? path.slice(collection.length + 1) : undefined;
  const get = method === 'GET';
  if (request.watch) {
    if (get && [`${core}/configmaps`, `${core}/pods`, `${coordination}/leases`].includes(path)) return openWatch(response);
  } else if (method === 'POST' && path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews') {
    return json(response, 201, { status: { allowed: true } });
  } else if (method === 'POST' && path === `${core}/events`) {
    return json(response, 201, JSON.parse(request.body));
  } else if (get && path === `${core}/configmaps`) {
    return json(response, 200, { metadata: { resourceVersion: '100' }, items: script.locks });
  } else if (get && path === `${coordination}/leases`) {
    return json(response, 200, { metadata: { resourceVersion: '100' }, items: [] });
  } else {
    const podName = item(`${core}/pods`);
    const pod = podName === 'op-0' ? script.pod : podName ? script.pods?.[podName] : undefined;
    if (get && pod) {
      const found = pod();
      return found ? json(response, 200, found) : json(response, 404, kubeStatus(404, 'NotFound', `pods "${podName}" not found`));
    }
    const lockName = item(`${core}/configmaps`);
    const lock = script.locks.find((cm) => lockName && cm.metadata?.name === lockName);
    if (get && lock) return json(response, 200, lock);
    if (method === 'DELETE' && lock) return json(response, 200, { kind: 'Status', status: 'Success' });
  }
  return false;
}

const uid = 'uid-self';
const deleting = (seconds: number): Pod => ({
  metadata: { name: 'op-0', namespace: 'ns', uid, deletionTimestamp: new Date(Date.now() + seconds * 1000).toISOString() },
  spec: { containers: [{ name: 'manager' }] },
});
const ownLock = (rv = '7'): ConfigMap => ({
  metadata: { name: 'op-lock', namespace: 'ns', uid: 'cm-1', resourceVersion: rv, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid }] },
});

async function start(url: string, releaseTimeoutMs = 1500, observe = false) {
  const lines: { msg: string; [k: string]: unknown }[] = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => lines.push(JSON.parse(l)) });
  const client = createKubeClient({ server: new URL(url), source: 'test' });
  const releaser = await runReleaser({ podName: 'op-0', podNamespace: 'ns', podUid: uid, client, logger, releaseTimeoutMs, observe });
  running.push({
    async stop() {
      await releaser.stop();
      client.close();
    },
  });
  return { releaser, lines, client };
}

/** Starts the hook, waits until it is ready, runs `beforeSigterm`, then the SIGTERM path; stops it again. */
async function terminate(url: string, options: { releaseTimeoutMs?: number; beforeSigterm?: () => void } = {}) {
  const { releaser, lines, client } = await start(url, options.releaseTimeoutMs);
  await guarded(releaser.ready);
  options.beforeSigterm?.();
  const t0 = performance.now();
  const result = await releaser.onTerminate();
  const elapsedMs = performance.now() - t0;
  await releaser.stop();
  client.close();
  return { result, lines, elapsedMs };
}

describe('onTerminate', () => {
  it('releases the own lock from the watch cache with its uid and resourceVersion as preconditions', async () => {
    let deleteBody = '';
    const api = await fakeApi({
      pod: () => deleting(30),
      locks: [ownLock()],
      override: (request) => {
        if (request.method === 'DELETE' && request.path.endsWith('/configmaps/op-lock')) deleteBody = request.body;
        return false;
      },
    });
    const { result, lines } = await terminate(api.url);
    assert.deepEqual(result.released, ['ConfigMap/op-lock']);
    assert.deepEqual(JSON.parse(deleteBody).preconditions, { uid: 'cm-1', resourceVersion: '7' });
    assert.ok(lines.some((l) => /^SIGTERM: released ConfigMap\/op-lock/.test(l.msg)));
    assert.ok(api.calls.includes('POST /api/v1/namespaces/ns/events'), 'an Event for the release');
    assert.equal(api.count(lockDelete), 1, 'one delete');
    assert.equal(api.count(eventPost), 1, 'one Event');
    assert.equal(api.count(ownPodRead), 2, 'the own pod: read at start, and live on SIGTERM');
    const reviews = requiredPermissions.reduce((n, p) => n + p.verbs.length, 0);
    assert.equal(api.count('POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews'), reviews, 'one access review per permission');
  });

  it('lists and watches ConfigMaps as metadata only, and reads the lock in full before SIGTERM', async () => {
    const accepts: string[] = [];
    const api = await fakeApi({
      pod: () => deleting(30),
      locks: [ownLock()],
      override: (request) => {
        if (request.path.endsWith('/configmaps')) accepts.push(`${request.watch ? 'watch' : 'list'} ${request.headers.accept}`);
        return false;
      },
    });
    const { releaser, client } = await start(api.url);
    await guarded(releaser.ready);
    for (let i = 0; i < 100 && !accepts.some((a) => a.startsWith('watch')); i++) await new Promise((r) => setTimeout(r, 10));
    const result = await releaser.onTerminate();
    await releaser.stop();
    client.close();
    assert.deepEqual(result.released, ['ConfigMap/op-lock']);
    assert.ok(
      accepts.some((a) => a.startsWith('list application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1')),
      accepts.join('\n'),
    );
    assert.ok(
      accepts.some((a) => a.startsWith('watch application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1')),
      accepts.join('\n'),
    );
    assert.ok(api.calls.includes('GET /api/v1/namespaces/ns/configmaps/op-lock'), 'the full lock is read live');
  });

  it('never deletes a ConfigMap of its own that turns out to carry data', async () => {
    const withData = { ...ownLock(), data: { 'config.yaml': 'x' } };
    const api = await fakeApi({ pod: () => deleting(30), locks: [withData] });
    const { result } = await terminate(api.url);
    assert.equal(result.decision.release, true, 'R1 applies');
    assert.deepEqual(result.released, []);
    assert.ok(!api.calls.some((c) => c.startsWith('DELETE')), api.calls.join('\n'));
    assert.equal(api.count(eventPost), 0, 'nothing released, nothing told');
  });

  it('gives up within releaseTimeoutMs when the API server stops answering, and says so', async () => {
    let hang = false;
    const api = await fakeApi({ pod: () => deleting(30), locks: [ownLock()], override: () => hang });
    const { result, lines, elapsedMs } = await terminate(api.url, { releaseTimeoutMs: 300, beforeSigterm: () => (hang = true) });
    assert.ok(elapsedMs < 600, `bounded (${elapsedMs.toFixed(0)} ms)`);
    assert.deepEqual(result.released, []);
    assert.equal(result.timedOut, 'release');
    await new Promise((r) => setTimeout(r, 50)); // the work the budget cut short settles meanwhile
    assert.equal(!result.decision.release && result.decision.refusal, 'timeout', 'the result stays what onTerminate settled with');
    assert.ok(lines.some((l) => /^SIGTERM: release gave up after 300 ms/.test(l.msg)));
  });

  it('says the locks were released when only the Event is late, not that the release gave up', async () => {
    let eventPosts = 0;
    const api = await fakeApi({
      pod: () => deleting(30),
      locks: [ownLock()],
      // the Event's POST is left hanging; every other request is answered
      override: (request) => {
        if (request.method === 'POST' && request.path.endsWith('/events')) {
          eventPosts++;
          return true;
        }
        return false;
      },
    });
    const { result, lines, elapsedMs } = await terminate(api.url, { releaseTimeoutMs: 300 });
    assert.ok(elapsedMs < 600, `bounded (${elapsedMs.toFixed(0)} ms)`);
    assert.deepEqual(result.released, ['ConfigMap/op-lock']);
    assert.deepEqual(result.failed, []);
    assert.equal(result.timedOut, 'events');
    assert.equal(result.decision.release, true);
    assert.equal(eventPosts, 1, 'one Event for the one release');
    assert.ok(
      lines.some((l) => /^SIGTERM: released ConfigMap\/op-lock \(.*\); Event not recorded within 300 ms$/.test(l.msg)),
      lines.map((l) => l.msg).join('\n'),
    );
    assert.ok(!lines.some((l) => /gave up/.test(l.msg)), 'the release did not give up');
  });

  it('retries a conflicting delete once after re-reading the lock, if it is still its own', async () => {
    let deletes = 0;
    const api = await fakeApi({
      pod: () => deleting(30),
      locks: [ownLock('7')],
      override: (request, response) => {
        if (request.method === 'DELETE' && request.path.endsWith('/configmaps/op-lock')) {
          deletes++;
          if (deletes === 1) {
            return json(response, 409, kubeStatus(409, 'Conflict', 'precondition failed'));
          }
        }
        if (request.method === 'GET' && request.path.endsWith('/configmaps/op-lock')) {
          return json(response, 200, ownLock('8'));
        }
        return false;
      },
    });
    const { result } = await terminate(api.url);
    assert.equal(deletes, 2);
    assert.equal(after1st(api, lockDelete).filter((c) => c === lockRead).length, 1, 'one re-read between the two deletes');
    assert.deepEqual(result.released, ['ConfigMap/op-lock']);
  });

  it('does not delete a lock that changed hands (conflict, then owned by another pod)', async () => {
    let deletes = 0;
    const api = await fakeApi({
      pod: () => deleting(30),
      locks: [ownLock('7')],
      override: (request, response) => {
        if (request.method === 'DELETE' && request.path.endsWith('/configmaps/op-lock')) {
          deletes++;
          return json(response, 409, kubeStatus(409, 'Conflict', 'precondition failed'));
        }
        // the version read ahead of SIGTERM is ours; the re-read after the conflict is not
        if (request.method === 'GET' && request.path.endsWith('/configmaps/op-lock') && deletes > 0) {
          const other = ownLock('9');
          other.metadata = { ...other.metadata, uid: 'cm-2', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-1', uid: 'uid-other' }] };
          return json(response, 200, other);
        }
        return false;
      },
    });
    const { result } = await terminate(api.url);
    assert.equal(deletes, 1);
    assert.equal(after1st(api, lockDelete).filter((c) => c === lockRead).length, 1, 'one re-read after the conflict');
    assert.deepEqual(result.released, []);
    assert.deepEqual(result.moved, ['ConfigMap/op-lock']);
  });

  it('releases nothing when the own pod cannot be read', async () => {
    let failPod = false;
    const api = await fakeApi({
      pod: () => deleting(30),
      locks: [ownLock()],
      override: (request, response) => {
        if (failPod && request.path.endsWith('/pods/op-0')) {
          return json(response, 503, kubeStatus(503, 'ServiceUnavailable', 'down'));
        }
        return false;
      },
    });
    const { result } = await terminate(api.url, { beforeSigterm: () => (failPod = true) });
    assert.equal(!result.decision.release && result.decision.refusal, 'ownPodUnreadable');
    assert.equal(after1st(api, ownPodRead).filter((c) => c === ownPodRead).length, 1, 'read once on SIGTERM: no retry within the budget');
    assert.ok(!api.calls.some((c) => c.startsWith('DELETE')));
  });

  it('is idempotent: a second SIGTERM returns the same result without a second release', async () => {
    const api = await fakeApi({ pod: () => deleting(30), locks: [ownLock()] });
    const { releaser, client } = await start(api.url);
    await guarded(releaser.ready);
    const [a, b] = await Promise.all([releaser.onTerminate(), releaser.onTerminate()]);
    await releaser.stop();
    client.close();
    assert.equal(a, b);
    assert.equal(api.calls.filter((c) => c.startsWith('DELETE')).length, 1);
    assert.equal(api.count(ownPodRead), 2, 'one live read of the own pod for both signals (and one at start)');
    assert.equal(api.count(eventPost), 1, 'one Event');
  });
});

/** Polls until `check` holds; fails the test after `ms`. */
async function until(what: string, check: () => boolean, ms = 3_000) {
  const t0 = Date.now();
  while (!check()) {
    const unexpected = apis.flatMap((a) => a.unexpected);
    if (unexpected.length > 0) assert.fail(`waiting for ${what}, the fake API got requests it was not scripted for: ${unexpected.join(', ')}`);
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('observe mode for the locks of other pods (R0, R2, R3)', () => {
  const self = (observe?: string): Pod => ({
    metadata: { name: 'op-0', namespace: 'ns', uid, ...(observe === undefined ? {} : { annotations: { 'leaderhook.io/observe': observe } }) },
    spec: { containers: [{ name: 'manager' }] },
  });
  const holder: Pod = {
    metadata: { name: 'op-old', namespace: 'ns', uid: 'uid-old', resourceVersion: '20' },
    spec: { containers: [{ name: 'manager' }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'manager', state: { running: {} } } as never] },
  };
  const otherLock: ConfigMap = {
    metadata: {
      name: 'other-lock',
      namespace: 'ns',
      uid: 'cm-9',
      resourceVersion: '11',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'op-old', uid: 'uid-old' }],
    },
  };

  /**
   * Starts with the own pod annotated `before` and the holder Running, the
   * flag --observe as `flag` says; then the annotation becomes `after`, the
   * holder disappears (R3), and a watch event on the holder makes the hook
   * look again.
   */
  async function flip(before: string | undefined, after: string, flag = false) {
    let observe = before;
    let holderGone = false;
    let holderWatch: ServerResponse | undefined;
    const bodies: string[] = [];
    const api = await fakeApi({
      pod: () => self(observe),
      pods: { 'op-old': () => (holderGone ? undefined : holder) },
      locks: [otherLock],
      override: (request, response) => {
        if (request.watch && request.path.endsWith('/pods')) {
          holderWatch = response;
          return openWatch(response);
        }
        if (request.method !== 'GET') bodies.push(`${request.method} ${request.path} ${request.body}`);
        return false;
      },
    });
    const { releaser, client } = await start(api.url, 1500, flag);
    await guarded(releaser.ready);
    await until('the holder is read and watched', () => holderWatch !== undefined && api.calls.includes('GET /api/v1/namespaces/ns/pods/op-old'));
    const before0 = api.calls.length;
    observe = after;
    holderGone = true;
    if (holderWatch) watchEvent(holderWatch, 'MODIFIED', { ...holder, metadata: { ...holder.metadata, resourceVersion: '21' } });
    return { api, bodies, releaser, client, since: () => api.calls.slice(before0) };
  }

  it("releases once the own pod's observe annotation is turned off after start", async () => {
    const { api, bodies, releaser, client, since } = await flip('true', 'false');
    await until('the lock is deleted', () => since().includes('DELETE /api/v1/namespaces/ns/configmaps/other-lock'));
    await releaser.stop();
    client.close();
    const later = since();
    const del = later.indexOf('DELETE /api/v1/namespaces/ns/configmaps/other-lock');
    assert.equal(later[del - 1], ownPodRead, `the own pod is read live right before the release:\n${later.join('\n')}`);
    assert.equal(later.filter((c) => c.startsWith('DELETE')).length, 1);
    const deletion = bodies.find((b) => b.startsWith('DELETE'));
    assert.deepEqual(JSON.parse(deletion?.split(' ').slice(2).join(' ') ?? '{}').preconditions, { uid: 'cm-9', resourceVersion: '11' });
    assert.ok(!api.calls.some((c) => c.startsWith('DELETE') && !c.endsWith('/other-lock')));
  });

  it("releases nothing once the own pod's observe annotation is turned on after start", async () => {
    const { api, bodies, releaser, client, since } = await flip(undefined, 'true');
    await until('the would-release Events', () => bodies.filter((b) => b.includes('"LeaderLockWouldRelease"')).length === 2);
    await releaser.stop();
    client.close();
    assert.ok(!api.calls.some((c) => c.startsWith('DELETE')), since().join('\n'));
    assert.ok(since().includes('GET /api/v1/namespaces/ns/pods/op-0'), 'the own pod is read live before deciding');
  });

  it("releases nothing with the flag on (the webhook's observe mode), though the own pod's annotation turns observe off", async () => {
    const { api, bodies, releaser, client, since } = await flip('true', 'false', true);
    await until('the would-release Events', () => bodies.filter((b) => b.includes('"LeaderLockWouldRelease"')).length === 2);
    await releaser.stop();
    client.close();
    assert.ok(!api.calls.some((c) => c.startsWith('DELETE')), since().join('\n'));
    assert.ok(since().includes('GET /api/v1/namespaces/ns/pods/op-0'), 'the own pod is read live before deciding');
  });
});
