import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { V1Pod } from '@kubernetes/client-node';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { INJECTOR_ERROR_WARNING } from '../../../src/webhook/app.ts';
import { eventually, type HttpResult, postJson, readTestdata, startTestServer, type TestServer } from './support.ts';

interface ReviewAnswer {
  apiVersion: string;
  kind: string;
  response: { uid: string; allowed: boolean; patchType?: string; patch?: string; warnings?: string[] };
}

function answerOf(result: HttpResult): ReviewAnswer {
  assert.equal(result.status, 200, result.body);
  return JSON.parse(result.body) as ReviewAnswer;
}

function patchOf(answer: ReviewAnswer): Operation[] {
  assert.equal(answer.response.patchType, 'JSONPatch');
  return JSON.parse(Buffer.from(answer.response.patch ?? '', 'base64').toString('utf8')) as Operation[];
}

function errorOf(result: HttpResult): string {
  return (JSON.parse(result.body) as { error: string }).error;
}

describe('webhook server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.cleanup();
  });

  it('answers a kubebuilder pod with a patch that applies to the submitted object', async () => {
    const body = await readTestdata('kubebuilder-pod.review.json');
    const submitted = JSON.parse(body) as { request: { uid: string; object: V1Pod } };
    const answer = answerOf(await postJson(server, body));
    assert.equal(answer.apiVersion, 'admission.k8s.io/v1');
    assert.equal(answer.kind, 'AdmissionReview');
    assert.equal(answer.response.uid, submitted.request.uid);
    assert.equal(answer.response.allowed, true);

    const pod = fastJsonPatch.applyPatch(structuredClone(submitted.request.object), patchOf(answer), true, false).newDocument;
    const hooks = (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always');
    assert.equal(hooks.length, 1, 'exactly one native sidecar is injected');
    assert.equal(pod.spec?.initContainers?.at(-1), hooks[0], 'the hook is the last init container');
    assert.ok(pod.metadata?.annotations?.['leaderhook.io/injected'], 'the injected annotation is set');
    assert.equal(pod.metadata?.annotations?.['kubectl.kubernetes.io/default-container'], 'manager', 'existing annotations kept');
    for (const container of pod.spec?.containers ?? []) {
      assert.ok(container.env?.some((e) => e.name === 'POD_NAME' && e.valueFrom?.fieldRef?.fieldPath === 'metadata.name'));
    }

    const line = server.lines.find((l) => l.msg === 'admission answered' && l.uid === submitted.request.uid);
    assert.ok(line, 'one log line per admission');
    assert.equal(line.namespace, 'memcached-operator-system');
    assert.equal(line.generateName, 'memcached-operator-controller-manager-7c9d8b5f4-');
    assert.equal(line.outcome, 'injected');
    assert.equal(line.reason, 'injected');
  });

  it('answers a pod with no env, initContainers or annotations, and its own output with no patch', async () => {
    const body = await readTestdata('minimal-pod.review.json');
    const submitted = JSON.parse(body) as { request: { object: V1Pod } };
    const first = answerOf(await postJson(server, body));
    const pod = fastJsonPatch.applyPatch(structuredClone(submitted.request.object), patchOf(first), true, false).newDocument;

    const again = JSON.parse(body) as { request: { uid: string; object: V1Pod } };
    again.request.uid = 'second-pass';
    again.request.object = pod;
    const second = answerOf(await postJson(server, JSON.stringify(again)));
    assert.equal(second.response.uid, 'second-pass');
    assert.equal(second.response.allowed, true);
    assert.equal(second.response.patch, undefined, 'an injected pod is left alone');
  });

  it('handles a dryRun request the same way', async () => {
    const review = JSON.parse(await readTestdata('minimal-pod.review.json'));
    review.request.dryRun = true;
    review.request.uid = 'dry-run-uid';
    const answer = answerOf(await postJson(server, JSON.stringify(review)));
    assert.equal(answer.response.uid, 'dry-run-uid');
    assert.ok(patchOf(answer).length > 0);
    assert.equal(server.lines.find((l) => l.uid === 'dry-run-uid')?.dryRun, true);
  });

  it('takes the timeout query the API server appends', async () => {
    const body = await readTestdata('minimal-pod.review.json');
    const result = await server.request('/mutate?timeout=5s', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), accept: 'application/json, */*' },
      body,
    });
    assert.equal(answerOf(result).response.allowed, true);
    assert.ok(patchOf(answerOf(result)).length > 0);
  });

  it('answers an UPDATE without a patch: a running pod cannot take one', async () => {
    const review = JSON.parse(await readTestdata('minimal-pod.review.json'));
    review.request.operation = 'UPDATE';
    review.request.uid = 'update-uid';
    review.request.oldObject = review.request.object;
    const answer = answerOf(await postJson(server, JSON.stringify(review)));
    assert.deepEqual(answer.response, { uid: 'update-uid', allowed: true });
    const line = server.lines.find((l) => l.uid === 'update-uid');
    assert.equal(line?.reason, 'notCreate');
    assert.equal(line?.outcome, 'skipped');
  });

  it('accepts a charset parameter and a gzip body', async () => {
    const body = await readTestdata('minimal-pod.review.json');
    const withCharset = await postJson(server, body, { 'content-type': 'application/json; charset=utf-8' });
    assert.equal(answerOf(withCharset).response.allowed, true);
    const zipped = gzipSync(body);
    const gzipped = await postJson(server, zipped, { 'content-encoding': 'gzip' });
    assert.equal(answerOf(gzipped).response.allowed, true);
  });

  const badBodies: Array<[string, RegExp]> = [
    ['bad/not-json.txt', /^the request body is not valid JSON: /],
    ['bad/array.json', /must be a JSON object \(an AdmissionReview\), got an array/],
    ['bad/wrong-api-version.json', /apiVersion must be admission.k8s.io\/v1, got "admission.k8s.io\/v1beta1"/],
    ['bad/wrong-kind.json', /kind must be AdmissionReview, got "ConversionReview"/],
    ['bad/missing-request.json', /^request is missing$/],
    ['bad/missing-uid.json', /^request.uid is missing$/],
    ['bad/missing-object.json', /^request.object is missing$/],
    ['bad/not-a-pod.json', /request.kind must be \/v1, Kind=Pod .*got apps\/v1, Kind=Deployment/],
  ];
  for (const [file, message] of badBodies) {
    it(`answers ${file} with 400 naming the problem`, async () => {
      const result = await postJson(server, await readTestdata(file));
      assert.equal(result.status, 400, result.body);
      assert.match(result.headers['content-type'] as string, /application\/json/);
      assert.match(errorOf(result), message);
    });
  }

  it('answers a wrong or missing Content-Type with 415', async () => {
    const body = await readTestdata('minimal-pod.review.json');
    const text = await postJson(server, body, { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    assert.match(errorOf(text), /Content-Type must be application\/json, got "text\/plain"/);
    const yaml = await postJson(server, body, { 'content-type': 'application/yaml' });
    assert.equal(yaml.status, 415);
    const missing = await server.request('/mutate', {
      method: 'POST',
      headers: { 'content-length': Buffer.byteLength(body) },
      body,
    });
    assert.equal(missing.status, 415);
    assert.match(errorOf(missing), /Content-Type is missing/);
  });

  it('answers an unsupported charset or encoding with 415', async () => {
    const body = await readTestdata('minimal-pod.review.json');
    const latin = await postJson(server, body, { 'content-type': 'application/json; charset=latin1' });
    assert.equal(latin.status, 415);
    assert.match(errorOf(latin), /charset/i);
    const brotliClaim = await postJson(server, body, { 'content-encoding': 'compress' });
    assert.equal(brotliClaim.status, 415);
    assert.match(errorOf(brotliClaim), /encoding/i);
  });

  it('answers an empty body with 400', async () => {
    const result = await postJson(server, '');
    assert.equal(result.status, 400);
    assert.match(errorOf(result), /request body is empty/);
  });

  it('answers a compressed body that does not inflate with 400 saying so', async () => {
    const body = await readTestdata('minimal-pod.review.json');
    const notGzip = await postJson(server, body, { 'content-encoding': 'gzip' });
    assert.equal(notGzip.status, 400);
    assert.match(errorOf(notGzip), /^the request body could not be decompressed \(Content-Encoding: gzip\): incorrect header check$/);
    const truncated = await postJson(server, brotliCompressSync(body).subarray(0, 20), { 'content-encoding': 'br' });
    assert.equal(truncated.status, 400);
    assert.match(errorOf(truncated), /^the request body could not be decompressed \(Content-Encoding: br\): /);
  });

  it('answers a chunked body that ends before its first byte with 400, as empty', async () => {
    const result = await server.request('/mutate', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: '',
    });
    assert.equal(result.status, 400);
    assert.equal(errorOf(result), 'the request body is empty; expected an AdmissionReview (application/json)');
  });

  it('answers a body over the limit with 413', async () => {
    const review = JSON.parse(await readTestdata('minimal-pod.review.json'));
    review.request.object.metadata.annotations = { padding: 'x'.repeat(70 * 1024) };
    const result = await postJson(server, JSON.stringify(review));
    assert.equal(result.status, 413);
    assert.match(errorOf(result), /larger than the limit of 65536 bytes/);
  });

  it('answers other methods on /mutate with 405 and unknown paths with 404', async () => {
    const get = await server.request('/mutate');
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'POST');
    assert.match(errorOf(get), /method GET is not allowed on \/mutate/);
    const unknown = await server.request('/validate', { method: 'POST' });
    assert.equal(unknown.status, 404);
    assert.match(errorOf(unknown), /no route for POST \/validate/);
  });

  it('serves healthz and readyz', async () => {
    const health = await server.request('/healthz');
    assert.equal(health.status, 200);
    const ready = await server.request('/readyz');
    assert.equal(ready.status, 200);
  });

  it('fails the TLS handshake of a client that does not trust the certificate, and keeps serving', async () => {
    const port = server.webhook.address.port;
    const failedHandshakes = () => server.lines.filter((l) => l.msg === 'TLS handshake failed').length;
    const failedBefore = failedHandshakes();

    // No CA given: the client knows only the public roots, so it must refuse the test CA's certificate.
    const error = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: true });
      socket.setTimeout(5000, () => {
        socket.destroy();
        reject(new Error('the TLS handshake neither completed nor failed within 5 s'));
      });
      socket.on('secureConnect', () => {
        socket.destroy();
        reject(new Error(`the handshake completed (authorized: ${socket.authorized}) for a client that does not trust the certificate`));
      });
      socket.on('error', resolve);
    });
    assert.equal(error.code, 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', error.message);
    const logged = await eventually(
      async () => failedHandshakes(),
      (count) => count > failedBefore,
    );
    assert.equal(logged, failedBefore + 1, 'the server saw the handshake fail');

    // The same connection with the test CA completes, so the refusal above is the missing trust and nothing else.
    const authorized = await new Promise<boolean>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, ca: server.ca, rejectUnauthorized: true });
      socket.setTimeout(5000, () => {
        socket.destroy();
        reject(new Error('the trusting client got no TLS handshake within 5 s'));
      });
      socket.on('secureConnect', () => {
        socket.destroy();
        resolve(socket.authorized);
      });
      socket.on('error', reject);
    });
    assert.equal(authorized, true);
    assert.equal((await server.request('/healthz')).status, 200);
  });
});

/** The value of one series in a Prometheus text exposition, e.g. `name{label="x"}`; fails when it is absent. */
function sampleOf(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  assert.ok(line, `${series} is exported:\n${text.slice(0, 2000)}`);
  return Number(line.slice(series.length + 1));
}

describe('webhook server metrics', () => {
  // A server of its own: every count below is exactly what this test sent, whichever other tests run.
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.cleanup();
  });

  it('exports the admission and certificate metrics', async () => {
    const body = await readTestdata('kubebuilder-pod.review.json');
    const submitted = JSON.parse(body) as { request: { uid: string; object: V1Pod } };
    const injected = answerOf(await postJson(server, body));
    const pod = fastJsonPatch.applyPatch(structuredClone(submitted.request.object), patchOf(injected), true, false).newDocument;

    const again = structuredClone(submitted);
    again.request.uid = 'metrics-already-injected';
    again.request.object = pod;
    assert.equal(answerOf(await postJson(server, JSON.stringify(again))).response.patch, undefined);

    const update = JSON.parse(body);
    update.request.uid = 'metrics-update';
    update.request.operation = 'UPDATE';
    update.request.oldObject = update.request.object;
    assert.equal(answerOf(await postJson(server, JSON.stringify(update))).response.patch, undefined);

    assert.equal((await postJson(server, await readTestdata('bad/not-json.txt'))).status, 400);
    const oversized = JSON.parse(body);
    oversized.request.object.metadata.annotations = { padding: 'x'.repeat(70 * 1024) };
    assert.equal((await postJson(server, JSON.stringify(oversized))).status, 413);

    const result = await server.request('/metrics');
    assert.equal(result.status, 200);
    assert.match(result.headers['content-type'] as string, /^text\/plain; version=0.0.4/);
    const text = result.body;
    const admissions = (outcome: string, reason: string) => sampleOf(text, `leaderhook_admissions_total{outcome="${outcome}",reason="${reason}"}`);
    assert.equal(admissions('injected', 'injected'), 1);
    assert.equal(admissions('skipped', 'alreadyInjected'), 1);
    assert.equal(admissions('skipped', 'notCreate'), 1);
    assert.equal(admissions('error', 'injectorError'), 0);
    assert.equal(admissions('skipped', 'optedOut'), 0, 'known series start at 0');
    assert.equal(sampleOf(text, 'leaderhook_admission_duration_seconds_count{outcome="injected"}'), 1);
    assert.equal(sampleOf(text, 'leaderhook_admission_duration_seconds_count{outcome="skipped"}'), 2);
    assert.equal(sampleOf(text, 'leaderhook_admission_rejected_requests_total{status="400"}'), 1);
    assert.equal(sampleOf(text, 'leaderhook_admission_rejected_requests_total{status="413"}'), 1);
    assert.equal(sampleOf(text, 'leaderhook_certificate_reloads_total'), 1);
    assert.equal(sampleOf(text, 'leaderhook_certificate_reload_errors_total'), 0);
    const notAfter = new X509Certificate(await readFile(join(server.dir, 'tls.crt'))).validToDate.getTime() / 1000;
    assert.equal(sampleOf(text, 'leaderhook_certificate_expiry_timestamp_seconds'), notAfter, "expiry is the serving certificate's notAfter");
    assert.ok(notAfter > Date.now() / 1000, 'expiry is in the future');
    assert.match(text, /^process_cpu_seconds_total /m);
  });
});

describe('webhook server with a failing injector', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      inject: () => {
        throw new TypeError('cannot read properties of undefined');
      },
    });
  });
  after(async () => {
    await server.cleanup();
  });

  it('admits the pod unchanged with a warning, an error log line and a metric', async () => {
    const answer = answerOf(await postJson(server, await readTestdata('kubebuilder-pod.review.json')));
    assert.equal(answer.response.uid, '0df28fbd-5f5f-4b3b-a3f4-6ee7f2bd4d47');
    assert.equal(answer.response.allowed, true);
    assert.equal(answer.response.patch, undefined);
    assert.deepEqual(answer.response.warnings, [INJECTOR_ERROR_WARNING]);

    const line = server.lines.find((l) => l.msg === 'injector failed, pod admitted unchanged');
    assert.ok(line);
    assert.equal(line.level, 'error');
    assert.equal(line.uid, '0df28fbd-5f5f-4b3b-a3f4-6ee7f2bd4d47');
    assert.match(JSON.stringify(line.err), /cannot read properties of undefined/);

    const metrics = (await server.request('/metrics')).body;
    assert.match(metrics, /leaderhook_admissions_total\{outcome="error",reason="injectorError"\} 1/);
  });
});

describe('webhook server connections', () => {
  // A server of its own: Node checks its connections' header and request timeouts every 30 s from its listen.
  let server: TestServer;
  let listenedAt: number;
  before(async () => {
    server = await startTestServer();
    listenedAt = performance.now();
  });
  after(async () => {
    await server.cleanup();
  });

  it('keeps a connection that has sent no request past its first timeout check, and answers a review on it then', async () => {
    const body = await readTestdata('kubebuilder-pod.review.json');
    const socket = connect({ host: '127.0.0.1', port: server.webhook.address.port, ca: server.ca, ALPNProtocols: ['http/1.1'] });
    const received: Buffer[] = [];
    let endedAtS: number | undefined;
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('end', () => {
      endedAtS = (performance.now() - listenedAt) / 1000;
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    try {
      // as the API server's transport parks a connection it dialled for a review another one served: unused until after the 30 s check
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 31_000 - (performance.now() - listenedAt))));
      assert.equal(endedAtS, undefined, `the webhook closed the unused connection ${endedAtS?.toFixed(1)} s after it listened`);
      assert.equal(
        Buffer.concat(received).length,
        0,
        `the webhook wrote to a connection that asked nothing: ${Buffer.concat(received).toString('latin1').slice(0, 80)}`,
      );
      socket.write(
        `POST /mutate?timeout=5s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      const head = await eventually(
        async () => Buffer.concat(received).toString('latin1'),
        (text) => text.includes('\r\n\r\n') || endedAtS !== undefined,
      );
      assert.match(head, /^HTTP\/1\.1 200 /, `the review on the parked connection was answered: ${head.slice(0, 80)}`);
    } finally {
      socket.destroy();
    }
  });
});
