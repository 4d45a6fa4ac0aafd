/**
 * How the webhook reads a review's body (src/webhook/app.ts,
 * src/webhook/review-json.ts): managedFields are skipped and change nothing
 * in the answer, a large pod is answered like a small one, UTF-16 and a byte
 * order mark are read as body-parser read them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { largePodReview } from '../../bench/webhook-pods.ts';
import { type HttpResult, postJson, readTestdata, startTestServer, type TestServer } from './support.ts';

interface Answer {
  response: { uid: string; allowed: boolean; patch?: string; warnings?: string[] };
}

function answerOf(result: HttpResult): Answer {
  assert.equal(result.status, 200, result.body);
  return JSON.parse(result.body) as Answer;
}

function patchOf(answer: Answer): Operation[] {
  return JSON.parse(Buffer.from(answer.response.patch ?? '', 'base64').toString('utf8')) as Operation[];
}

describe('webhook body', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ bodyLimitBytes: 3 * 1024 * 1024 });
  });
  after(async () => {
    await server.cleanup();
  });

  it('answers a pod with managedFields exactly as the same pod without them, and the patch applies to the pod as sent', async () => {
    const review = JSON.parse(await readTestdata('kubebuilder-pod.review.json'));
    const plain = answerOf(await postJson(server, JSON.stringify(review)));
    const managedFields = [
      {
        manager: 'kube-controller-manager',
        operation: 'Update',
        apiVersion: 'v1',
        time: '2026-11-30T12:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:generateName': {} } },
      },
    ];
    review.request.object.metadata.managedFields = managedFields;
    const withFields = answerOf(await postJson(server, JSON.stringify(review, null, 2)));
    assert.deepEqual(patchOf(withFields), patchOf(plain));
    assert.deepEqual(withFields.response.warnings, plain.response.warnings);
    const pod = fastJsonPatch.applyPatch(structuredClone(review.request.object), patchOf(withFields), true, false).newDocument as V1Pod;
    assert.deepEqual(pod.metadata?.managedFields, managedFields);
    assert.ok(pod.spec?.initContainers?.some((c) => c.name === 'leaderhook-release'));
  });

  it('injects the large benchmark pod: every container gets its env, the patch applies', async () => {
    const body = largePodReview();
    const answer = answerOf(await postJson(server, body));
    const submitted = JSON.parse(body.toString('utf8')).request.object as V1Pod;
    const pod = fastJsonPatch.applyPatch(structuredClone(submitted), patchOf(answer), true, false).newDocument;
    assert.equal(pod.spec?.containers.length, 20);
    for (const container of pod.spec?.containers ?? [])
      assert.ok(
        container.env?.some((e) => e.name === 'POD_NAME'),
        container.name,
      );
    assert.deepEqual(pod.metadata?.managedFields, submitted.metadata?.managedFields);
  });

  it('reads a UTF-16 body and one with a UTF-8 byte order mark', async () => {
    const text = await readTestdata('minimal-pod.review.json');
    const plain = answerOf(await postJson(server, text));
    const utf16 = answerOf(await postJson(server, Buffer.from(text, 'utf16le'), { 'content-type': 'application/json; charset=utf-16le' }));
    assert.deepEqual(patchOf(utf16), patchOf(plain));
    const bom = answerOf(await postJson(server, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])));
    assert.deepEqual(patchOf(bom), patchOf(plain));
  });

  it('answers a body broken outside managedFields with 400 and JSON.parse’s message', async () => {
    const text = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { object: { metadata: { managedFields: [] } } } });
    const broken = `${text.slice(0, -2)},}}`;
    const result = await postJson(server, broken);
    assert.equal(result.status, 400);
    let message = '';
    try {
      JSON.parse(broken);
    } catch (error) {
      message = (error as Error).message;
    }
    assert.equal((JSON.parse(result.body) as { error: string }).error, `the request body is not valid JSON: ${message}`);
  });
});
