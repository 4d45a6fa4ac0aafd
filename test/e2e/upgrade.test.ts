/**
 * An upgrade as a user does it, from the registry: release N (npm run
 * release) and N+1 (test/release/build-next-release.sh: the same sources,
 * the next patch version) published into a fresh repository of the local
 * cluster's registry; N installed with Helm from oci://; a leader-for-life
 * and a Lease operator in an opted-in namespace; then
 * - at N a rollout restart fails over through the hook (R1);
 * - helm upgrade to N+1: the webhook runs N+1, the operators' pods keep the
 *   hook N injected (nothing rewrites a running pod);
 * - an N hook restarted after the upgrade, its image gone from the node,
 *   pulls N again from the registry and keeps the lock where it is;
 * - a rollout restart at N+1: the N hooks free their locks by R1, the new
 *   pods are injected by N+1 and pull it, one leader at every heartbeat.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/upgrade.test.ts
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { HOOK_CONTAINER_NAME } from '../../src/injector/index.ts';
import { version } from '../../src/version.ts';
import { type LeaderLock, leaseLock, lflLock, type Scenario, setUpOperator } from '../support/operators.ts';
import { finishRecording, heartbeatWriters, heartbeats, releaseEvents, waitForRecorded } from '../support/recording.ts';
import { admissionRegistration, connectTestCluster, core, kubeconfigPath } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { deleteNamespaceAndWait, grantReleaseHook, INJECTION_LABEL, kubectl, requireCertManager, rolloutRestartUntilNewLeader } from '../support/leaderhook.ts';
import { podEvents, publish, pullOutcomes, registryCa, registryHost, registryMissing, removeRepositoryFromNode } from '../support/registry.ts';
import { helm, repo } from '../support/tools.ts';

connectTestCluster();

const NAMESPACE = 'leaderhook-system';
const INJECTED = 'leaderhook.io/injected';
const releaseDir = process.env.LEADERHOOK_RELEASE_DIR ?? path.join(repo, 'release', version);
/** The patch after `version`, as test/release/build-next-release.sh numbers it. */
const next = version.replace(/\d+$/, (patch) => String(Number(patch) + 1));
const nextReleaseDir =
  process.env.LEADERHOOK_NEXT_RELEASE_DIR ??
  path.join(process.env.LEADERHOOK_CACHE ?? path.join(process.env.HOME ?? '/root', '.cache/leaderhook'), 'next-release', next);
const registry = `${registryHost}/upgrade-${randomBytes(3).toString('hex')}`;
const image = (v: string) => `${registry}/leaderhook:${v}`;

/** A pod the restricted Pod Security of the operators' namespaces admits (deploy/examples, which the README's install dry-runs too). */
const probePod = parse(readFileSync(path.join(repo, 'deploy/examples/probe-pod.yaml'), 'utf8')) as V1Pod;

const helmHere = (args: string[]) => helm([...args, '--kubeconfig', kubeconfigPath, '--namespace', NAMESPACE, '--ca-file', registryCa ?? '']);

function publishRelease(dir: string): void {
  const published = publish(dir, [], registry);
  assert.equal(published.status, 0, `scripts/publish.sh ${dir} ${registry}: ${published.stderr}`);
}

function installChart(v: string, command: 'install' | 'upgrade'): void {
  helmHere([
    command,
    'leaderhook',
    `oci://${registry}/charts/leaderhook`,
    '--version',
    v,
    '--set',
    `image.repository=${registry}/leaderhook`,
    '--wait',
    '--timeout',
    '180s',
  ]);
}

async function operatorPods(namespace: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace })).items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** The webhook's pods all run `v`'s image and inject `v` (a dry-run pod says so). */
async function waitForWebhookAt(v: string, probeNamespace: string): Promise<void> {
  await waitFor(
    `the webhook at ${v}`,
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: NAMESPACE })).items.filter((p) => !p.metadata?.deletionTimestamp);
      if (pods.length === 0 || pods.some((p) => p.spec?.containers[0]?.image !== image(v))) return false;
      const probe = await core.createNamespacedPod({
        namespace: probeNamespace,
        dryRun: 'All',
        body: probePod,
      });
      return probe.metadata?.annotations?.[INJECTED] === v;
    },
    180_000,
  );
}

/** The pod that holds the lock now and wrote the latest heartbeat (the recording has seen leaders come and go). */
function leaderNow<L>(recording: Scenario['recording'], lock: LeaderLock<L>): Promise<string> {
  return waitForRecorded(
    recording,
    'a leader that holds the lock and writes its heartbeat',
    async () => {
      const holder = lock.holderOf(lock.events(recording).at(-1)?.object);
      return holder && heartbeats(recording, lock.heartbeat).at(-1)?.holder === holder ? holder : undefined;
    },
    120_000,
  );
}

/** `kubectl rollout restart`; resolves once a pod of the new ReplicaSet leads, with the old leader's R1 Event. */
async function rollOver<L>(scenario: Scenario, operator: string, lock: LeaderLock<L>): Promise<{ leader: string; newLeader: string }> {
  const { recording } = scenario;
  const leader = await leaderNow(recording, lock);
  const newLeader = await rolloutRestartUntilNewLeader(scenario, operator, lock);
  await waitForRecorded(recording, `${leader}'s R1 release`, async () => releaseEvents(recording, leader, 'R1').length === 1, 30_000);
  return { leader, newLeader };
}

function assertInjectedAt(pods: V1Pod[], v: string): void {
  assert.ok(pods.length > 0, 'operator pods to look at');
  for (const pod of pods) {
    assert.equal(pod.metadata?.annotations?.[INJECTED], v, `${pod.metadata?.name} injected by ${v}`);
    const hook = pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME);
    assert.equal(hook?.image, image(v), `${pod.metadata?.name}'s hook runs ${v}`);
  }
}

describe('upgrade from the registry: N installed, operators failing over, N+1 installed over it, operators rolled', { skip: registryMissing() }, () => {
  const operators = [
    { operator: 'lfl-operator', lock: lflLock as LeaderLock<unknown> },
    { operator: 'lease-operator', lock: leaseLock as LeaderLock<unknown> },
  ];
  const scenarios = new Map<string, Scenario>();
  // The operators' namespaces live through all four steps: their clean-ups
  // (setUpOperator's) run when the suite ends, not after the first test.
  const cleanups: (() => Promise<void>)[] = [];
  const suite = { after: (cleanup: () => Promise<void>) => cleanups.push(cleanup) } as unknown as TestContext;

  before(() => {
    for (const [dir, how] of [
      [releaseDir, 'npm run release (test/run-all.sh does), or set LEADERHOOK_RELEASE_DIR'],
      [nextReleaseDir, 'test/release/build-next-release.sh (test/run-all.sh does), or set LEADERHOOK_NEXT_RELEASE_DIR'],
    ] as const) {
      assert.ok(existsSync(path.join(dir, 'SHA256SUMS')), `no release in ${dir}: run ${how}`);
    }
    assert.match(readFileSync(path.join(nextReleaseDir, 'SHA256SUMS'), 'utf8'), new RegExp(`leaderhook-${next.replaceAll('.', '\\.')}\\.oci\\.tar`));
    requireCertManager();
    publishRelease(releaseDir);
    publishRelease(nextReleaseDir);
  });
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch(() => {});
    await deleteNamespaceAndWait(NAMESPACE);
    // The kubelet's image GC is off in the local cluster: what this test pulled would stay.
    removeRepositoryFromNode(`${registry}/leaderhook`);
  });

  test(`at ${version}: installed with Helm from oci://, a rollout restart of each operator fails over through R1`, async (t) => {
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch(() => {});
    await deleteNamespaceAndWait(NAMESPACE);
    kubectl(['create', 'namespace', NAMESPACE]);
    kubectl(['label', 'namespace', NAMESPACE, 'leaderhook.io/injection=disabled', 'pod-security.kubernetes.io/enforce=restricted']);
    installChart(version, 'install');
    for (const { operator } of operators) {
      const scenario = await setUpOperator(suite, {
        prefix: `e2e-upgrade-${operator === 'lfl-operator' ? 'lfl' : 'lease'}`,
        operator,
        options: { shape: 'deployment', withoutPodNameEnv: true },
        labels: INJECTION_LABEL,
        // helm --wait sees the webhook's pods ready, not cainjector's CA in
        // its configuration: until both are there the API server skips the
        // webhook (failurePolicy Ignore) and the operator would start uninjected.
        prepare: async (namespace) => {
          await grantReleaseHook(namespace, 'test-operator');
          await waitForWebhookAt(version, namespace);
        },
      });
      scenarios.set(operator, scenario);
    }
    for (const { operator, lock } of operators) {
      const scenario = scenarios.get(operator)!;
      const { leader, newLeader } = await rollOver(scenario, operator, lock);
      assertInjectedAt(await operatorPods(scenario.namespace), version);
      t.diagnostic(`${operator} at ${version}: ${leader} -> ${newLeader}, freed by R1`);
    }
  });

  test(`helm upgrade to ${next}: the webhook runs and injects ${next}, the running operators keep their ${version} hooks`, async () => {
    installChart(next, 'upgrade');
    for (const { operator } of operators) {
      const { namespace } = scenarios.get(operator)!;
      await waitForWebhookAt(next, namespace);
      assertInjectedAt(await operatorPods(namespace), version);
    }
  });

  test(`a ${version} hook that restarts after the upgrade pulls ${version} from the registry again, and the lock stays with its leader`, async () => {
    const { namespace, recording } = scenarios.get('lfl-operator')!;
    const leader = await leaderNow(recording, lflLock);
    // Both versions off the node: the restarted hook must pull N, and the
    // rollout below N+1.
    removeRepositoryFromNode(`${registry}/leaderhook`);
    const pod = await core.readNamespacedPod({ name: leader, namespace });
    const hookStatus = () => pod.status?.initContainerStatuses?.find((s) => s.name === HOOK_CONTAINER_NAME);
    const containerId = hookStatus()?.containerID?.replace(/^containerd:\/\//, '');
    assert.ok(containerId, `${leader}'s hook container`);
    const restartsBefore = hookStatus()?.restartCount ?? 0;
    // The hook crashes (SIGKILL to its process): the kubelet restarts the sidecar, from its image.
    execFileSync('ctr', ['--address', process.env.CONTAINERD_ADDRESS ?? '', '--namespace', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', containerId]);
    await waitFor(
      `${leader}'s hook to run again`,
      async () => {
        const now = (await core.readNamespacedPod({ name: leader, namespace })).status?.initContainerStatuses?.find((s) => s.name === HOOK_CONTAINER_NAME);
        return (now?.restartCount ?? 0) > restartsBefore && now?.state?.running !== undefined;
      },
      120_000,
    );
    const pulls = pullOutcomes(await podEvents(namespace, leader), `spec.initContainers{${HOOK_CONTAINER_NAME}}`, image(version));
    assert.ok(pulls.includes('pulled'), `${leader}'s hook pulled ${image(version)} again (${pulls.join(', ')})`);
    const holder = lflLock.holderOf(lflLock.events(recording).at(-1)?.object);
    assert.equal(holder, leader, 'a crashed hook releases nothing: the leader keeps its lock');
  });

  test(`at ${next}: a rollout restart of each operator fails over through the ${version} hooks' R1, onto pods injected by ${next}`, async (t) => {
    for (const { operator, lock } of operators) {
      const scenario = scenarios.get(operator)!;
      const { leader, newLeader } = await rollOver(scenario, operator, lock);
      const pods = await operatorPods(scenario.namespace);
      assertInjectedAt(pods, next);
      const pulled = (
        await Promise.all(
          pods.map(async (p) =>
            pullOutcomes(await podEvents(scenario.namespace, p.metadata!.name!), `spec.initContainers{${HOOK_CONTAINER_NAME}}`, image(next)),
          ),
        )
      ).flat();
      assert.equal(pulled.length, pods.length, `every new hook started from ${image(next)}`);
      if (operator === operators[0]?.operator)
        assert.ok(pulled.includes('pulled'), `a new hook pulled ${image(next)} from the registry (${pulled.join(', ')})`);
      await finishRecording(scenario.recording);
      const writers = heartbeatWriters(scenario.recording, lock);
      t.diagnostic(`${operator} at ${next}: ${leader} -> ${newLeader}; leaders in turn: ${writers.join(' -> ')}`);
    }
  });
});
