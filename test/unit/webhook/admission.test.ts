import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionDecodeError, allowed, decodeAdmissionReview, patched } from '../../../src/webhook/admission.ts';

function review(request: Record<string, unknown> | undefined, top: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request, ...top };
}

const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [] } };
const goodRequest = { uid: 'u-1', kind: { group: '', version: 'v1', kind: 'Pod' }, object: pod };
const deploymentKind = { group: 'apps', version: 'v1', kind: 'Deployment' };
const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { spec: { containers: [] } } } };

describe('decodeAdmissionReview', () => {
  it('returns a well-formed review with its request', () => {
    const decoded = decodeAdmissionReview(review({ ...goodRequest, namespace: 'ns', dryRun: true }));
    assert.equal(decoded.request.uid, 'u-1');
    assert.equal(decoded.request.namespace, 'ns');
    assert.equal(decoded.request.dryRun, true);
    assert.deepEqual(decoded.request.object, pod);
  });

  it('accepts every workload kind, in its own group and version', () => {
    for (const [group, kind] of [
      ['apps', 'Deployment'],
      ['apps', 'StatefulSet'],
      ['apps', 'DaemonSet'],
      ['apps', 'ReplicaSet'],
      ['batch', 'Job'],
      ['batch', 'CronJob'],
    ] as const) {
      const object = { apiVersion: `${group}/v1`, kind, metadata: { name: 'w' } };
      const decoded = decodeAdmissionReview(review({ uid: 'u-w', kind: { group, version: 'v1', kind }, object }));
      assert.deepEqual(decoded.request.object, object, kind);
    }
  });

  it('accepts an object without apiVersion and kind as what request.kind says', () => {
    const { apiVersion, kind, ...bare } = deployment;
    const decoded = decodeAdmissionReview(review({ uid: 'u-b', kind: deploymentKind, object: bare }));
    assert.deepEqual(decoded.request.object, bare);
  });

  it('accepts a DELETE without an object (the API server sends oldObject) as a null object', () => {
    for (const object of [undefined, null]) {
      const decoded = decodeAdmissionReview(review({ uid: 'u-d', kind: deploymentKind, operation: 'DELETE', object, oldObject: deployment }));
      assert.equal(decoded.request.object, null);
      assert.equal(decoded.request.operation, 'DELETE');
    }
  });

  const cases: Array<[string, unknown, RegExp]> = [
    ['not an object', 'text', /must be a JSON object .*got "text"/],
    ['an array', [review(goodRequest)], /must be a JSON object .*got an array/],
    ['null', null, /got null/],
    ['no apiVersion', { kind: 'AdmissionReview', request: goodRequest }, /^apiVersion is missing$/],
    ['v1beta1', review(goodRequest, { apiVersion: 'admission.k8s.io/v1beta1' }), /apiVersion must be admission.k8s.io\/v1, got "admission.k8s.io\/v1beta1"/],
    ['no kind', { apiVersion: 'admission.k8s.io/v1', request: goodRequest }, /^kind is missing$/],
    ['wrong kind', review(goodRequest, { kind: 'ConversionReview' }), /kind must be AdmissionReview, got "ConversionReview"/],
    ['no request', review(undefined), /^request is missing$/],
    ['request not an object', review(undefined, { request: 7 }), /request must be an object, got number 7/],
    ['no uid', review({ ...goodRequest, uid: undefined }), /^request.uid is missing$/],
    ['empty uid', review({ ...goodRequest, uid: '' }), /request.uid must be a non-empty string/],
    ['numeric uid', review({ ...goodRequest, uid: 12 }), /request.uid must be a non-empty string, got number 12/],
    ['no request.kind', review({ ...goodRequest, kind: undefined }), /^request.kind is missing$/],
    [
      'a Service, naming the kinds it accepts',
      review({ ...goodRequest, kind: { group: '', version: 'v1', kind: 'Service' }, object: { apiVersion: 'v1', kind: 'Service' } }),
      /request.kind must be \/v1, Kind=Pod .*apps\/v1 Deployment, StatefulSet, DaemonSet, ReplicaSet; batch\/v1 Job, CronJob, got v1, Kind=Service$/,
    ],
    [
      'a v1beta1 Deployment',
      review({ ...goodRequest, kind: { group: 'apps', version: 'v1beta1', kind: 'Deployment' } }),
      /got apps\/v1beta1, Kind=Deployment$/,
    ],
    [
      'a Deployment kind with a Pod object',
      review({ ...goodRequest, kind: deploymentKind }),
      /^request.kind must be \/v1, Kind=Pod to match request.object, got apps\/v1, Kind=Deployment$/,
    ],
    [
      'a Deployment object without apiVersion under a Pod kind',
      review({ ...goodRequest, object: { kind: 'Deployment' } }),
      /^request.object \(apiVersion missing, kind "Deployment"\) does not match request.kind v1, Kind=Pod$/,
    ],
    ['a v2 Pod', review({ ...goodRequest, kind: { group: '', version: 'v2', kind: 'Pod' } }), /got v2, Kind=Pod/],
    [
      'a kind whose members are not strings, one of which String() cannot convert',
      review({ ...goodRequest, kind: { group: 7, version: { toString: 1 }, kind: ['Pod'] } }),
      /got an object, Kind=an array$/,
    ],
    [
      'a kind with a huge name, quoted cut short',
      review({ ...goodRequest, kind: { group: '', version: 'v1', kind: 'x'.repeat(100_000) } }),
      /got v1, Kind=x{60}\.\.\.$/,
    ],
    [
      'an object of a huge kind, quoted cut short',
      review({ ...goodRequest, object: { apiVersion: 'v1', kind: 'y'.repeat(100_000) } }),
      /^request.kind must be \/v1, Kind=y{60}\.\.\. to match request.object, got v1, Kind=Pod$/,
    ],
    ['no object', review({ ...goodRequest, object: undefined }), /^request.object is missing$/],
    ['null object outside a DELETE', review({ ...goodRequest, object: null }), /^request.object is missing$/],
    ['object is a string', review({ ...goodRequest, object: 'pod' }), /request.object must be an object, got "pod"/],
    ['dryRun not boolean', review({ ...goodRequest, dryRun: 'yes' }), /request.dryRun must be a boolean/],
    ['namespace not string', review({ ...goodRequest, namespace: 3 }), /request.namespace must be a string/],
  ];
  for (const [name, body, message] of cases) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => decodeAdmissionReview(body),
        (error: unknown) => {
          assert.ok(error instanceof AdmissionDecodeError);
          assert.match(error.message, message);
          return true;
        },
      );
    });
  }
});

describe('response builders', () => {
  it('allowed echoes the uid and omits empty warnings', () => {
    assert.deepEqual(allowed('u-1'), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: true },
    });
    assert.deepEqual(allowed('u-1', ['w']).response?.warnings, ['w']);
  });

  it('patched sends a base64 JSON Patch', () => {
    const ops = [{ op: 'add' as const, path: '/metadata/annotations', value: { a: 'b' } }];
    const answer = patched('u-2', ops, ['grace period raised']);
    assert.equal(answer.response?.uid, 'u-2');
    assert.equal(answer.response?.allowed, true);
    assert.equal(answer.response?.patchType, 'JSONPatch');
    assert.deepEqual(JSON.parse(Buffer.from(answer.response?.patch ?? '', 'base64').toString('utf8')), ops);
    assert.deepEqual(answer.response?.warnings, ['grace period raised']);
  });

  it('patched with an empty patch sends no patch', () => {
    const answer = patched('u-3', []);
    assert.equal(answer.response?.patch, undefined);
    assert.equal(answer.response?.patchType, undefined);
    assert.equal(answer.response?.allowed, true);
  });
});
