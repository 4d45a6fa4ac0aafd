/**
 * runChecks against an API answered from memory: a healthy install as
 * deploy/ makes it is all ✓, and each thing broken the way installs break
 * turns exactly its check ✗, with a remedy (test/unit/check/fake-cluster.ts).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type CheckResult, exitCode } from '../../../src/check/report.ts';
import { runChecks } from '../../../src/check/run.ts';
import { createCertificateAuthority, issueServingCertificate, type PemPair, WEBHOOK_SERVICE_NAMES } from '../../../src/webhook/devcerts.ts';
import { b64, type FakeCluster, fakeApi, healthyCluster } from './fake-cluster.ts';

describe('runChecks', () => {
  let ca: PemPair;
  let serving: PemPair;
  before(async () => {
    ca = await createCertificateAuthority('leaderhook check test CA');
    serving = await issueServingCertificate(ca, WEBHOOK_SERVICE_NAMES);
  });

  const healthy = () => healthyCluster(ca, serving);

  async function run(cluster: FakeCluster, namespace?: string): Promise<CheckResult[]> {
    return runChecks(fakeApi(cluster), {
      webhookConfiguration: 'leaderhook',
      tlsSecret: 'leaderhook-webhook-tls',
      now: new Date(),
      server: 'https://fake',
      ...(namespace ? { namespace } : {}),
    });
  }

  const titles = (results: CheckResult[]) => results.map((r) => `${r.ok ? '✓' : '✗'} ${r.title}`);
  const failedTitles = (results: CheckResult[]) => results.filter((r) => !r.ok).map((r) => r.title);

  it('a healthy install is all ✓, one line per check, exit 0', async () => {
    const results = await run(healthy());
    assert.deepEqual(titles(results), [
      '✓ API server',
      '✓ webhook registration',
      '✓ serving certificate',
      '✓ webhook endpoints',
      '✓ opted-in namespaces',
      '✓ namespace ops: dry-run pod',
      '✓ namespace ops: hook permissions of ServiceAccount manager',
      '✓ namespace ops: pods injected',
      '✓ namespace ops: hook image',
    ]);
    assert.equal(exitCode(results), 0);
    assert.match(results[0]!.detail, /Kubernetes v1.34.4, as kubernetes-admin/);
    assert.match(results[2]!.detail, /for leaderhook-webhook.leaderhook-system.svc; \d+ days left/);
    assert.match(results[5]!.detail, /injected by leaderhook 0.1.0, hook image leaderhook.test\/leaderhook:dev/);
    assert.match(results[6]!.detail, /all 13 permissions/);
    assert.match(results[8]!.detail, /on node node-1/);
  });

  it('the probe pod would pass Pod Security "restricted" and lacks POD_NAME, as the operators leaderhook serves', async () => {
    const api = fakeApi(healthy());
    await runChecks(api, { webhookConfiguration: 'leaderhook', tlsSecret: 'leaderhook-webhook-tls', now: new Date(), server: 'https://fake' });
    const [probe] = api.dryRuns;
    assert.equal(probe?.spec?.securityContext?.runAsNonRoot, true);
    assert.equal(probe?.spec?.securityContext?.seccompProfile?.type, 'RuntimeDefault');
    const container = probe?.spec?.containers[0];
    assert.deepEqual(container?.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    assert.equal(container?.env, undefined);
  });

  it('the webhook scaled to 0: endpoints and the dry-run pod turn ✗, exit 1', async () => {
    const cluster = { ...healthy(), readyEndpoints: 0, webhookInjects: false };
    const results = await run(cluster);
    assert.deepEqual(failedTitles(results), ['webhook endpoints', 'namespace ops: dry-run pod']);
    assert.equal(exitCode(results), 1);
    const endpoints = results.find((r) => r.title === 'webhook endpoints')!;
    assert.match(endpoints.detail, /no ready endpoint \(2 not ready\)/);
    assert.match(endpoints.remedy ?? '', /kubectl -n leaderhook-system get pods -l app.kubernetes.io\/component=webhook/);
  });

  it("a ServiceAccount without the hook's RoleBinding: its permission line turns ✗ with the commands that bind it", async () => {
    const cluster = healthy();
    cluster.denied.set('ops:manager', ['configmaps/get', 'configmaps/list', 'configmaps/watch', 'configmaps/delete', 'leases/update']);
    const results = await run(cluster);
    assert.deepEqual(failedTitles(results), ['namespace ops: hook permissions of ServiceAccount manager']);
    const line = results.find((r) => !r.ok)!;
    assert.match(line.detail, /lacks configmaps get, configmaps list, configmaps watch, configmaps delete, leases.coordination.k8s.io update/);
    assert.match(line.remedy ?? '', /kubectl create rolebinding -n ops leaderhook-release-manager --role=leaderhook-release --serviceaccount=ops:manager/);
  });

  it('a serving certificate from another CA, and a registration without the Fail entry', async () => {
    const cluster = healthy();
    const otherCa = await createCertificateAuthority('another CA');
    cluster.secret['tls.crt'] = b64((await issueServingCertificate(otherCa, WEBHOOK_SERVICE_NAMES)).cert);
    delete cluster.secret['tls.key'];
    cluster.registration!.webhooks = cluster.registration!.webhooks!.filter((w) => w.name !== 'require-pod-name.leaderhook.io');
    const results = await run(cluster);
    assert.deepEqual(failedTitles(results), ['webhook registration', 'serving certificate']);
    assert.match(results[1]!.detail, /require-pod-name.leaderhook.io is missing/);
    assert.match(results[2]!.detail, /does not verify it: it was issued by "CN=another CA"/);
  });

  it('no registration at all still checks the rest, and says what to apply', async () => {
    const results = await run({ ...healthy(), registration: undefined });
    assert.deepEqual(failedTitles(results), ['webhook registration', 'serving certificate']);
    assert.match(results[1]!.remedy ?? '', /kubectl apply -k deploy\//);
  });

  it('pods created while the webhook was down, and a hook image no node can pull', async () => {
    const cluster = healthy();
    cluster.pods.push({
      metadata: { name: 'op-1' },
      spec: { serviceAccountName: 'manager', nodeName: 'node-2', containers: [{ name: 'op' }] },
      status: { phase: 'Running' },
    });
    const stuck = structuredClone(cluster.pods[0]!);
    stuck.metadata = { ...stuck.metadata, name: 'op-2' };
    stuck.status = {
      phase: 'Pending',
      initContainerStatuses: [
        {
          name: 'leaderhook-release',
          image: '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ErrImagePull', message: 'not found' } },
        },
      ],
    };
    cluster.pods.push(stuck);
    const results = await run(cluster);
    assert.deepEqual(failedTitles(results), ['namespace ops: pods injected', 'namespace ops: hook image']);
    assert.match(results.find((r) => r.title === 'namespace ops: pods injected')!.detail, /1 pod lacks leaderhook.io\/injected .*: op-1/);
    const image = results.find((r) => r.title === 'namespace ops: hook image')!;
    assert.match(image.detail, /pod op-2 on node node-1: ErrImagePull, leaderhook\.test has no such tag \(not found\)/);
    assert.match(image.remedy ?? '', /^push leaderhook\.test\/leaderhook:dev to leaderhook\.test /);
  });

  it('hooks that cannot be pulled for two reasons: each pod named with its cause, one remedy per cause', async () => {
    const cluster = healthy();
    const stuck = (name: string, image: string, reason: string, message: string) => {
      const pod = structuredClone(cluster.pods[0]!);
      pod.metadata = { ...pod.metadata, name };
      pod.spec!.initContainers = pod.spec!.initContainers!.map((c) => (c.name === 'leaderhook-release' ? { ...c, image } : c));
      pod.status = {
        phase: 'Pending',
        initContainerStatuses: [{ name: 'leaderhook-release', image, imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message } } }],
      };
      return pod;
    };
    cluster.pods.push(
      stuck(
        'op-old',
        'r.example:5000/leaderhook:0.0.9',
        'ImagePullBackOff',
        'Back-off pulling image "r.example:5000/leaderhook:0.0.9": ErrImagePull: dial tcp 10.0.0.9:5000: connect: connection refused',
      ),
      stuck('op-new', 'leaderhook.test/leaderhook:dev', 'ErrImagePull', 'rpc error: code = NotFound desc = leaderhook.test/leaderhook:dev: not found'),
    );
    const image = (await run(cluster)).find((r) => r.title === 'namespace ops: hook image')!;
    assert.equal(image.ok, false);
    assert.match(image.detail, /^2 hooks cannot get r\.example:5000\/leaderhook:0\.0\.9, leaderhook\.test\/leaderhook:dev: /);
    assert.match(
      image.detail,
      /pod op-old on node node-1: ImagePullBackOff, r\.example:5000 does not answer from the node \(dial tcp 10\.0\.0\.9:5000: connect: connection refused\)/,
    );
    assert.match(image.detail, /pod op-new on node node-1: ErrImagePull, leaderhook\.test has no such tag \(leaderhook\.test\/leaderhook:dev: not found\)/);
    assert.match(image.remedy ?? '', /^make r\.example:5000 reachable from those nodes .*; and push leaderhook\.test\/leaderhook:dev to leaderhook\.test /);
  });

  it('imagePullPolicy Never with a node that lacks the image is ✗; IfNotPresent lets it pull', async () => {
    const cluster = { ...healthy(), nodeImages: ['registry.k8s.io/pause:3.10'] };
    const results = await run(cluster);
    const image = results.find((r) => r.title === 'namespace ops: hook image')!;
    assert.equal(image.ok, false, 'the golden settings pull Never');
    assert.match(image.detail, /not listed by node node-1, and its imagePullPolicy is Never/);
  });

  it('--namespace: one namespace, which must be opted in', async () => {
    const cluster = healthy();
    cluster.namespaces.push({ name: 'plain', mode: '' });
    const results = await run(cluster, 'plain');
    assert.deepEqual(failedTitles(results), ['opted-in namespaces']);
    assert.match(results.at(-1)!.detail, /namespace plain has no label leaderhook.io\/injection/);
    assert.match(results.at(-1)!.remedy ?? '', /kubectl label namespace plain leaderhook.io\/injection=enabled/);
    assert.equal(exitCode(await run(cluster, 'ops')), 0);
    assert.match((await run(cluster, 'missing')).at(-1)!.detail, /namespace missing not found/);
  });

  it('no opted-in namespace is ✗: leaderhook injects nothing yet', async () => {
    const results = await run({ ...healthy(), namespaces: [] });
    assert.deepEqual(failedTitles(results), ['opted-in namespaces']);
  });
});
