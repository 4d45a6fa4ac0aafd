/**
 * Workload objects over HTTP: a Deployment, CronJob, ... review is answered
 * with the warnings its pods would get and never with a patch (docs/design.md#warnings-on-workloads-never-patches);
 * kinds leaderhook neither mutates nor checks get a 400 naming those it does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WORKLOAD_ERROR_WARNING } from '../../../src/webhook/app.ts';
import { type HttpResult, postJson, readTestdata, startTestServer, type TestServer } from './support.ts';

interface ReviewAnswer {
  apiVersion: string;
  kind: string;
  response: Record<string, unknown> & { uid: string; allowed: boolean; warnings?: string[] };
}

const FLOOR_WARNING_0 = 'leaderhook: terminationGracePeriodSeconds 0s -> 10s (floor: the release hook needs time after the operator stops)';

function answerOf(result: HttpResult): ReviewAnswer {
  assert.equal(result.status, 200, result.body);
  return JSON.parse(result.body) as ReviewAnswer;
}

/** Warnings only: a patch would make the stored workload drift from what was applied. */
function assertNoPatch(answer: ReviewAnswer): void {
  assert.equal(answer.response.allowed, true);
  assert.ok(!('patch' in answer.response), 'no patch for a workload');
  assert.ok(!('patchType' in answer.response), 'no patchType for a workload');
}

async function deploymentReview(uid: string): Promise<{ request: Record<string, unknown> & { object: Record<string, unknown> } }> {
  const review = JSON.parse(await readTestdata('deployment.review.json'));
  review.request.uid = uid;
  return review;
}

function sampleOf(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('webhook server, workload objects', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.cleanup();
  });

  it('answers a Deployment with its pods’ warnings, allowed and without a patch, in one log line', async () => {
    const body = await readTestdata('deployment.review.json');
    const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
    const answer = answerOf(await postJson(server, body));
    assert.equal(answer.apiVersion, 'admission.k8s.io/v1');
    assert.equal(answer.kind, 'AdmissionReview');
    assert.equal(answer.response.uid, uid);
    assertNoPatch(answer);
    assert.deepEqual(answer.response.warnings, [FLOOR_WARNING_0]);

    const lines = server.lines.filter((l) => l.uid === uid);
    assert.equal(lines.length, 1, 'one log line per admission');
    assert.equal(lines[0]?.msg, 'workload admission answered with warnings only');
    assert.equal(lines[0]?.level, 'info');
    assert.equal(lines[0]?.kind, 'Deployment');
    assert.equal(lines[0]?.namespace, 'demo');
    assert.equal(lines[0]?.name, 'operator');
    assert.equal(lines[0]?.outcome, 'warned');
    assert.equal(lines[0]?.reason, 'templateWarnings');
    assert.deepEqual(lines[0]?.warnings, [FLOOR_WARNING_0]);
  });

  it('reads a CronJob’s pod template from spec.jobTemplate.spec.template', async () => {
    const answer = answerOf(await postJson(server, await readTestdata('cronjob.review.json')));
    assertNoPatch(answer);
    assert.deepEqual(answer.response.warnings, [
      'leaderhook: terminationGracePeriodSeconds 5s -> 10s (floor: the release hook needs time after the operator stops)',
    ]);
  });

  it('answers an UPDATE of a Deployment with warnings too: a changed template is where they come from', async () => {
    const review = await deploymentReview('workload-update');
    review.request.operation = 'UPDATE';
    review.request.oldObject = structuredClone(review.request.object);
    const answer = answerOf(await postJson(server, JSON.stringify(review)));
    assert.equal(answer.response.uid, 'workload-update');
    assertNoPatch(answer);
    assert.deepEqual(answer.response.warnings, [FLOOR_WARNING_0]);
  });

  it('answers a DELETE of a Deployment, which carries only oldObject, with no warnings', async () => {
    const review = await deploymentReview('workload-delete');
    review.request.operation = 'DELETE';
    review.request.oldObject = review.request.object;
    review.request.object = null as unknown as Record<string, unknown>;
    const answer = answerOf(await postJson(server, JSON.stringify(review)));
    assert.deepEqual(answer.response, { uid: 'workload-delete', allowed: true });
    const line = server.lines.find((l) => l.uid === 'workload-delete');
    assert.equal(line?.reason, 'notCreateOrUpdate');
    assert.equal(line?.outcome, 'skipped');
    assert.equal(line?.name, 'operator');
  });

  it('answers a Deployment whose template opts out with no warnings', async () => {
    const review = await deploymentReview('workload-opted-out');
    const template = (review.request.object.spec as { template: { metadata: { labels: Record<string, string> } } }).template;
    template.metadata.labels['leaderhook.io/inject'] = 'false';
    const answer = answerOf(await postJson(server, JSON.stringify(review)));
    assert.deepEqual(answer.response, { uid: 'workload-opted-out', allowed: true });
    assert.equal(server.lines.find((l) => l.uid === 'workload-opted-out')?.reason, 'templateSkipped');
  });

  it('answers a Service with 400 naming the kinds it accepts', async () => {
    const result = await postJson(server, await readTestdata('bad/service.json'));
    assert.equal(result.status, 400, result.body);
    const error = (JSON.parse(result.body) as { error: string }).error;
    assert.match(error, /^request.kind must be \/v1, Kind=Pod .*got v1, Kind=Service$/);
    for (const kind of ['apps/v1 Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'batch/v1 Job', 'CronJob']) {
      assert.ok(error.includes(kind), `${kind} named in: ${error}`);
    }
  });
});

describe('webhook server, workload metrics', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.cleanup();
  });

  it('counts workload admissions with the outcome warned or skipped and the workload reason', async () => {
    assertNoPatch(answerOf(await postJson(server, await readTestdata('deployment.review.json'))));
    const optedOut = await deploymentReview('metrics-opted-out');
    (optedOut.request.object.spec as { template: { metadata: Record<string, unknown> } }).template.metadata.annotations = { 'leaderhook.io/inject': 'false' };
    assertNoPatch(answerOf(await postJson(server, JSON.stringify(optedOut))));
    const deleted = await deploymentReview('metrics-delete');
    deleted.request.operation = 'DELETE';
    deleted.request.object = null as unknown as Record<string, unknown>;
    assertNoPatch(answerOf(await postJson(server, JSON.stringify(deleted))));

    const metrics = (await server.request('/metrics')).body;
    const admissions = (outcome: string, reason: string) => sampleOf(metrics, `leaderhook_admissions_total{outcome="${outcome}",reason="${reason}"}`);
    assert.equal(admissions('warned', 'templateWarnings'), 1);
    assert.equal(admissions('skipped', 'templateSkipped'), 1);
    assert.equal(admissions('skipped', 'notCreateOrUpdate'), 1);
    assert.equal(admissions('skipped', 'templateClean'), 0, 'known series start at 0');
    assert.equal(sampleOf(metrics, 'leaderhook_admission_duration_seconds_count{outcome="warned"}'), 1);
    assert.equal(sampleOf(metrics, 'leaderhook_admission_duration_seconds_count{outcome="skipped"}'), 2);
  });
});

describe('webhook server with an injected workload checker', () => {
  let server: TestServer;
  const seen: unknown[] = [];
  before(async () => {
    server = await startTestServer({
      inject: () => {
        throw new Error('the pod injector is not called for a workload');
      },
      workloadWarnings: (workload) => {
        seen.push(workload);
        if ((workload as { kind?: string }).kind === 'CronJob') throw new TypeError('cannot read properties of undefined');
        return { reason: 'templateWarnings', message: 'from the test', warnings: ['leaderhook: from the test'] };
      },
    });
  });
  after(async () => {
    await server.cleanup();
  });

  it('calls the checker with the workload and sends its warnings', async () => {
    const review = await deploymentReview('checker-uid');
    delete review.request.object.apiVersion;
    delete review.request.object.kind;
    const answer = answerOf(await postJson(server, JSON.stringify(review)));
    assertNoPatch(answer);
    assert.deepEqual(answer.response.warnings, ['leaderhook: from the test']);
    const checked = seen.at(-1) as { apiVersion?: string; kind?: string; metadata?: { name?: string } };
    assert.equal(checked.apiVersion, 'apps/v1', 'an object without apiVersion is checked as what request.kind says');
    assert.equal(checked.kind, 'Deployment');
    assert.equal(checked.metadata?.name, 'operator');
  });

  it('admits the workload with a warning, an error log line and a metric when the checker throws', async () => {
    const answer = answerOf(await postJson(server, await readTestdata('cronjob.review.json')));
    assertNoPatch(answer);
    assert.deepEqual(answer.response.warnings, [WORKLOAD_ERROR_WARNING]);
    assert.ok(WORKLOAD_ERROR_WARNING.length <= 120);
    const line = server.lines.find((l) => l.msg === 'checking the pod template failed, workload admitted without its warnings');
    assert.ok(line);
    assert.equal(line.level, 'error');
    assert.equal(line.kind, 'CronJob');
    assert.match(JSON.stringify(line.err), /cannot read properties of undefined/);
    const metrics = (await server.request('/metrics')).body;
    assert.equal(sampleOf(metrics, 'leaderhook_admissions_total{outcome="error",reason="injectorError"}'), 1);
  });
});
