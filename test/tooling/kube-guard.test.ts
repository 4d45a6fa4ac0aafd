/**
 * test/support/kube.ts connects only when asked: importing it sends nothing,
 * a client used before connectTestCluster() says so, and outside the local
 * cluster's network namespace the connection is refused before any request.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { broughtOwnCluster, connectTestCluster, core } from '../support/kube.ts';

test('a client used before connectTestCluster() fails with a message naming the call', () => {
  assert.throws(() => core.listNamespace(), /core used before connectTestCluster\(\)/);
});

test('outside the cluster network namespace the connection is refused', { skip: broughtOwnCluster && 'LEADERHOOK_KUBECONFIG is set' }, () => {
  const saved = process.env.LEADERHOOK_NETNS;
  process.env.LEADERHOOK_NETNS = 'leaderhook-guard-test-absent';
  try {
    assert.throws(() => connectTestCluster(), /no network namespace leaderhook-guard-test-absent/);
  } finally {
    if (saved === undefined) delete process.env.LEADERHOOK_NETNS;
    else process.env.LEADERHOOK_NETNS = saved;
  }
  assert.throws(() => core.listNamespace(), /used before connectTestCluster/, 'a refused connection leaves the clients unconnected');
});
