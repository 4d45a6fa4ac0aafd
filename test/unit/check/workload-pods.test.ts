import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  hookPullFailures,
  isInjectable,
  nodeListsImage,
  operatorNodes,
  qualifiedImageName,
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
    assert.deepEqual(hookPullFailures([stuck, other, ...pods]), [{ pod: 'stuck', node: 'n1', reason: 'ImagePullBackOff', message: 'Back-off pulling image' }]);
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
