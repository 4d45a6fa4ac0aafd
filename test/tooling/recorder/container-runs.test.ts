/**
 * The recorder follows logs run by run: the runs a pod event shows, and where
 * the log of a run is served as the pod moves on (restarts, deletion, a new
 * pod of the same name).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { runKey, runsOf, whereIsRun } from '../../support/container-runs.ts';

const running = { running: { startedAt: new Date('2026-12-03T10:15:00Z') } };
const exited = (exitCode: number, containerID: string) => ({ terminated: { exitCode, containerID } });

function pod(uid: string, status: Partial<V1ContainerStatus>, name = 'lfl-operator-0'): V1Pod {
  const operator: V1ContainerStatus = { name: 'operator', image: 'op', imageID: '', ready: true, restartCount: 0, ...status };
  return { metadata: { name, uid }, status: { containerStatuses: [operator] } };
}

describe('container runs', () => {
  test('a waiting container has no run yet; a running one has one, keyed by pod UID, container and restartCount', () => {
    assert.deepEqual(runsOf(pod('uid-1', { state: { waiting: { reason: 'ContainerCreating' } } }), 'operator'), []);
    const [run, ...more] = runsOf(pod('uid-1', { state: running, containerID: 'containerd://a' }), 'operator');
    assert.deepEqual(more, []);
    assert.deepEqual(run, { pod: 'lfl-operator-0', podUID: 'uid-1', container: 'operator', restartCount: 0, containerID: 'containerd://a' });
    assert.equal(run && runKey(run), 'uid-1/operator/0');
    assert.deepEqual(runsOf(pod('uid-1', { state: running, containerID: 'containerd://a' }), 'leaderhook-release'), []);
  });

  test('after a restart a pod event shows two runs: the new one and the one it replaced', () => {
    const restarted = pod('uid-1', { state: running, containerID: 'containerd://b', restartCount: 1, lastState: exited(1, 'containerd://a') });
    assert.deepEqual(
      runsOf(restarted, 'operator').map((run) => [runKey(run), run.containerID]),
      [
        ['uid-1/operator/1', 'containerd://b'],
        ['uid-1/operator/0', 'containerd://a'],
      ],
    );
  });

  test('the release hook, a native sidecar, is found among the init containers', () => {
    const hook: V1ContainerStatus = {
      name: 'leaderhook-release',
      image: 'h',
      imageID: '',
      ready: true,
      restartCount: 0,
      state: running,
      containerID: 'containerd://h',
    };
    const withHook: V1Pod = { metadata: { name: 'p', uid: 'uid-1' }, status: { initContainerStatuses: [hook] } };
    assert.deepEqual(runsOf(withHook, 'leaderhook-release').map(runKey), ['uid-1/leaderhook-release/0']);
  });

  test("a run's log is current while it runs, exited once it stopped, previous once replaced, gone after that", () => {
    const [first] = runsOf(pod('uid-1', { state: running, containerID: 'containerd://a' }), 'operator');
    assert.ok(first);
    assert.equal(whereIsRun(pod('uid-1', { state: running, containerID: 'containerd://a' }), first), 'current');
    assert.equal(whereIsRun(pod('uid-1', { state: exited(1, 'containerd://a'), containerID: 'containerd://a' }), first), 'exited');
    const second = pod('uid-1', { state: running, containerID: 'containerd://b', restartCount: 1, lastState: exited(1, 'containerd://a') });
    assert.equal(whereIsRun(second, first), 'previous');
    const third = pod('uid-1', { state: running, containerID: 'containerd://c', restartCount: 2, lastState: exited(1, 'containerd://b') });
    assert.equal(whereIsRun(third, first), 'gone', 'the kubelet keeps only the previous run');
  });

  test('a run of a pod that is gone, or replaced by a new pod of the same name, is gone: its name now serves the other pod', () => {
    const [old] = runsOf(pod('uid-1', { state: running, containerID: 'containerd://a' }), 'operator');
    assert.ok(old);
    assert.equal(whereIsRun(undefined, old), 'gone');
    const successor = pod('uid-2', { state: running, containerID: 'containerd://a' });
    assert.equal(whereIsRun(successor, old), 'gone', 'same name, same container ID text, another UID');
    const [next] = runsOf(successor, 'operator');
    assert.ok(next && runKey(next) !== runKey(old), 'the new pod run is followed on its own');
  });
});
