import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  hookPullFailures,
  isInjectable,
  nodeListsImage,
  operatorNodes,
  pullErrorText,
  pullFailureCause,
  qualifiedImageName,
  registryOf,
  serviceAccountsOf,
  uninjectedPods,
} from '../../../src/check/workload-pods.ts';
import type { Pod } from '../../../src/kube/types.ts';

function pod(
  name: string,
  fields: { sa?: string; node?: string; injected?: boolean; labels?: Record<string, string>; annotations?: Record<string, string>; phase?: string } = {},
): Pod {
  return {
    metadata: {
      name,
      labels: fields.labels ?? {},
      annotations: { ...fields.annotations, ...(fields.injected ? { 'leaderhook.io/injected': '0.1.0' } : {}) },
    },
    spec: { containers: [{ name: 'c' }], ...(fields.sa ? { serviceAccountName: fields.sa } : {}), ...(fields.node ? { nodeName: fields.node } : {}) },
    status: { phase: fields.phase ?? 'Running' },
  };
}

describe('what the pods of a namespace tell the check', () => {
  const pods = [
    pod('op-a', { sa: 'manager', node: 'n2', injected: true }),
    pod('op-b', { sa: 'manager', node: 'n1' }),
    pod('plain', { node: 'n1' }),
    pod('opted-out', { sa: 'tool', node: 'n3', labels: { 'leaderhook.io/inject': 'false' } }),
    pod('static-n4', { sa: 'static', node: 'n4', annotations: { 'kubernetes.io/config.mirror': 'x' } }),
    pod('done', { sa: 'job', node: 'n5', phase: 'Succeeded' }),
  ];

  it('leaves out pods the webhook never injects', () => {
    assert.deepEqual(
      pods.filter(isInjectable).map((p) => p.metadata?.name),
      ['op-a', 'op-b', 'plain', 'done'],
    );
  });

  it('finds the ServiceAccounts the hook runs as, with default for pods that name none', () => {
    assert.deepEqual(serviceAccountsOf(pods), ['default', 'job', 'manager']);
  });

  it('finds the pods that should carry the hook and do not, leaving finished ones out', () => {
    assert.deepEqual(uninjectedPods(pods), ['op-b', 'plain']);
  });

  it('leaves out a pod being deleted: the old pod of a rollout that already has its injected replacement', () => {
    const old = pod('op-old', { node: 'n1', injected: false });
    old.metadata = { ...old.metadata, deletionTimestamp: '2026-12-01T00:00:00Z' };
    assert.deepEqual(uninjectedPods([...pods, old]), ['op-b', 'plain']);
  });

  it('finds the nodes that run injectable pods', () => {
    assert.deepEqual(operatorNodes(pods), ['n1', 'n2']);
  });

  it('finds hooks waiting on their image', () => {
    const stuck = pod('stuck', { node: 'n1', injected: true });
    stuck.status = {
      phase: 'Pending',
      initContainerStatuses: [
        {
          name: 'leaderhook-release',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } },
        },
      ],
    };
    const other = pod('other-init', { node: 'n1' });
    other.status = {
      initContainerStatuses: [{ name: 'setup', image: 'y', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull' } } }],
    };
    assert.deepEqual(hookPullFailures([stuck, other, ...pods]), [
      { pod: 'stuck', node: 'n1', image: 'x', reason: 'ImagePullBackOff', message: 'Back-off pulling image' },
    ]);
  });

  it('matches an image to the names a node reports, short or qualified', () => {
    assert.equal(qualifiedImageName('leaderhook:0.1.0'), 'docker.io/library/leaderhook:0.1.0');
    assert.equal(qualifiedImageName('team/leaderhook:0.1.0'), 'docker.io/team/leaderhook:0.1.0');
    assert.equal(qualifiedImageName('leaderhook.test/leaderhook:dev'), 'leaderhook.test/leaderhook:dev');
    assert.equal(qualifiedImageName('localhost:5000/leaderhook:dev'), 'localhost:5000/leaderhook:dev');
    const images = [{ names: ['docker.io/library/leaderhook@sha256:abc', 'docker.io/library/leaderhook:0.1.0'] }, { names: ['registry.k8s.io/pause:3.10'] }];
    assert.equal(nodeListsImage(images, 'leaderhook:0.1.0'), true);
    assert.equal(nodeListsImage(images, 'docker.io/library/leaderhook:0.1.0'), true);
    assert.equal(nodeListsImage(images, 'leaderhook:0.2.0'), false);
    assert.equal(nodeListsImage(undefined, 'leaderhook:0.1.0'), false);
  });
});

/**
 * The kubelet's waiting messages of a hook that could not be pulled, as
 * Kubernetes v1.34.4 on containerd 1.6.20 wrote them in the local cluster
 * (test/e2e/registry-pull.test.ts; the x509 one is the cause an event of the
 * same pull named, in the waiting message's wrapping), and one of Docker Hub's.
 */
const MESSAGES = {
  missing:
    'rpc error: code = NotFound desc = failed to pull and unpack image "10.213.0.2:5000/leaderhook:0.1.0-missing": failed to resolve reference "10.213.0.2:5000/leaderhook:0.1.0-missing": 10.213.0.2:5000/leaderhook:0.1.0-missing: not found',
  down: 'Back-off pulling image "10.213.0.2:5000/leaderhook:0.1.0-other": ErrImagePull: failed to pull and unpack image "10.213.0.2:5000/leaderhook:0.1.0-other": failed to resolve reference "10.213.0.2:5000/leaderhook:0.1.0-other": failed to do request: Head "https://10.213.0.2:5000/v2/leaderhook/manifests/0.1.0-other": dial tcp 10.213.0.2:5000: connect: connection refused',
  untrusted:
    'rpc error: code = Unknown desc = failed to pull and unpack image "10.213.0.2:5000/proof/pause:copied": failed to resolve reference "10.213.0.2:5000/proof/pause:copied": failed to do request: Head "https://10.213.0.2:5000/v2/proof/pause/manifests/copied": x509: certificate signed by unknown authority',
  denied:
    'rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/team/private:1": failed to resolve reference "docker.io/team/private:1": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed',
};

describe('why a hook pull failed, from the kubelet’s message', () => {
  it('tells a missing tag, a registry that does not answer, an untrusted certificate and a refused pull apart', () => {
    assert.equal(pullFailureCause('ErrImagePull', MESSAGES.missing), 'missing');
    assert.equal(pullFailureCause('ImagePullBackOff', MESSAGES.down), 'unreachable');
    assert.equal(pullFailureCause('ErrImagePull', MESSAGES.untrusted), 'untrusted');
    assert.equal(pullFailureCause('ErrImagePull', MESSAGES.denied), 'unauthorized');
  });

  it('a back-off without the earlier error, and the reasons that say it all', () => {
    assert.equal(pullFailureCause('ImagePullBackOff', 'Back-off pulling image "x:1"'), 'unknown');
    assert.equal(pullFailureCause('ErrImageNeverPull', 'Container image "x:1" is not present with pull policy of Never'), 'never');
    assert.equal(pullFailureCause('InvalidImageName', 'Failed to apply default image tag "X:1"'), 'invalid');
  });

  it('a manifest URL that contains "not found" does not make a connection failure a missing tag', () => {
    const message = 'failed to do request: Head "https://r:5000/v2/not found/manifests/1": dial tcp r:5000: i/o timeout';
    assert.equal(pullFailureCause('ErrImagePull', message), 'unreachable');
  });

  it('keeps the cause and drops the wrapping that repeats the image', () => {
    assert.equal(pullErrorText(MESSAGES.missing), '10.213.0.2:5000/leaderhook:0.1.0-missing: not found');
    assert.equal(pullErrorText(MESSAGES.down), 'dial tcp 10.213.0.2:5000: connect: connection refused');
    assert.equal(pullErrorText(MESSAGES.untrusted), 'x509: certificate signed by unknown authority');
    assert.equal(pullErrorText('Back-off pulling image "x:1"'), '');
    assert.equal(pullErrorText('x'.repeat(300)).length, 200);
  });

  it('names the registry an image comes from, docker.io for a name without one', () => {
    assert.equal(registryOf('10.213.0.2:5000/leaderhook:0.1.0'), '10.213.0.2:5000');
    assert.equal(registryOf('ghcr.io/org/leaderhook@sha256:abc'), 'ghcr.io');
    assert.equal(registryOf('leaderhook:0.1.0'), 'docker.io');
  });
});
