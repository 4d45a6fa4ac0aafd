/**
 * An operator on kopf (test/operators/kopf-operator) with kopf's own peering:
 * no lock, but a KopfPeering object whose status holds one entry per replica,
 * `status.<POD_ID>: {priority, lifetime, lastseen}`, POD_ID the pod's UID (kopf
 * _core/engines/peering.py), kept alive every 50-55 s (lifetime 60 s); a
 * replica that sees a live entry of a higher priority pauses, and resumes once
 * no such entry is left. The replicas are kopf-operator-0 (priority 100, the
 * leader) and kopf-operator-1 (99), two bare pods of the StatefulSet's template
 * in test/operators/manifests/kopf-operator.yaml: a StatefulSet would bring the
 * deleted leader back under the same name, identity and priority, and it would
 * take over again at once.
 *
 * With leaderhook and without (docs/design.md#kopf-peering-entries):
 * - the leader pod deleted: kopf's clean exit removes its own entry (a merge
 *   patch setting it to null, on cancelling its keep-alive), and the standby
 *   resumes at once, long before the entry would have expired; the hook
 *   removes nothing;
 * - the leader pod deleted while its operator ignores SIGTERM, so that the
 *   kubelet SIGKILLs it at the end of the grace period: the entry stays, and
 *   the standby resumes only when it has expired (lastseen + 60 s), removing
 *   it itself as a dead peer; the hook's SIGTERM comes too late for R1 and the
 *   pod is gone (no R3), so it removes nothing either;
 * - the leader pod deleted while its operator exits at once on SIGTERM without
 *   kopf's cleanup (a process that crashes while stopping): without
 *   leaderhook the standby waits for the entry to expire; with it, the old
 *   pod's hook removes the entry by R1 and the standby resumes at once;
 * - the leader failed by its kubelet (activeDeadlineSeconds) while ignoring
 *   SIGTERM, its pod never deleted: without leaderhook the standby waits for
 *   the entry to expire; with it, the standby's hook removes the entry by R2
 *   once the pod is Failed.
 * Each run passes the split-brain check with the peering as the lock: every heartbeat
 * is written by the replica whose entry has the highest priority, as of the
 * peering's latest revision before it.
 *
 * Needs the leaderhook and operator images (scripts/build-local-image.sh,
 * test/operators/build.sh). Run inside the cluster's network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/kopf-operator.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, type V1Lease, type V1PodSpec, type V1Role, type V1RoleBinding, type V1StatefulSet, Watch } from '@kubernetes/client-node';
import { connectTestCluster, core, createTestNamespace, kubeConfig, rbac } from '../support/kube.ts';
import { grantKopfPeering, grantReleaseHook, INJECTION_LABEL, installLeaderhook, kubectl } from '../support/leaderhook.ts';
import { applyOperatorRbac, kopfPeering, OPERATOR_CONTAINER, operatorObjects, RELEASE_HOOK_CONTAINER, record } from '../support/operators.ts';
import type { Recording } from '../support/recorder.ts';
import { type Heartbeat, heartbeats, hookSignalTime, hookSigtermLine, logOf, operatorExited, podGone, summary, waitForRecorded } from '../support/recording.ts';
import { checkSplitBrain, type ObservedWrite } from '../support/split-brain.ts';
import { assertInjected, assertNotInjected, waitForSteadyLeader } from '../support/takeover.ts';
import { assertBefore, hookMarks, type Mark, mark, printTimeline } from '../support/timeline.ts';

connectTestCluster();
const custom = kubeConfig.makeApiClient(CustomObjectsApi);

const LEADER = 'kopf-operator-0';
const STANDBY = 'kopf-operator-1';
/** kopf's default peering lifetime (PeeringSettings.lifetime), which the manifest keeps. */
const LIFETIME_MS = 60_000;
const out = process.env.LEADERHOOK_FAILOVER_OUT;

interface PeerEntry {
  priority?: number;
  lifetime?: number;
  lastseen?: string;
}
interface KopfPeeringObject {
  metadata?: { name?: string; resourceVersion?: string };
  status?: Record<string, PeerEntry | null>;
}
interface PeeringEvent extends ObservedWrite<KopfPeeringObject> {
  /** Local time the event arrived. */
  at: number;
}
interface PeeringWatch {
  events: PeeringEvent[];
  interruptions: string[];
  stop: () => void;
}

// ---------------------------------------------------------------------------
// The KopfPeering object, watched from before it exists

/**
 * Watches the namespace's KopfPeering objects for as long as the test runs:
 * a watch that ends (client-node closes one silent for 30 s; keep-alives come
 * every 25 s or so) resumes at the last resourceVersion; 410 Gone lists again
 * and marks what it finds `relisted`, which the split-brain check flags.
 */
function watchPeering(namespace: string): PeeringWatch {
  const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfpeerings`;
  const watch: PeeringWatch = { events: [], interruptions: [], stop: () => {} };
  const abort = new AbortController();
  let controller: AbortController | undefined;
  let lastRv: string | undefined;
  const list = async (): Promise<void> => {
    const page = (await custom.listNamespacedCustomObject({ group: 'kopf.dev', version: 'v1', namespace, plural: 'kopfpeerings' })) as {
      metadata?: { resourceVersion?: string };
      items?: KopfPeeringObject[];
    };
    for (const object of page.items ?? []) {
      watch.events.push({ type: 'ADDED', object, rv: BigInt(object.metadata?.resourceVersion ?? '0'), relisted: true, at: Date.now() });
    }
    lastRv = page.metadata?.resourceVersion;
  };
  const watchOnce = async (): Promise<boolean> => {
    const ended = Promise.withResolvers<boolean>();
    controller = await new Watch(kubeConfig).watch(
      path,
      { allowWatchBookmarks: true, ...(lastRv ? { resourceVersion: lastRv } : {}) },
      (type: string, object: KopfPeeringObject & { code?: number }) => {
        if (type === 'ERROR') {
          ended.resolve(object.code === 410);
          return;
        }
        const rv = object.metadata?.resourceVersion;
        if (!rv) return;
        lastRv = rv;
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') watch.events.push({ type, object, rv: BigInt(rv), at: Date.now() });
      },
      (error: (Error & { statusCode?: number }) | null) => ended.resolve(error?.statusCode === 410),
    );
    if (abort.signal.aborted) controller.abort();
    const gone = await ended.promise;
    controller.abort();
    return gone;
  };
  const run = async (): Promise<void> => {
    let needList = true;
    while (!abort.signal.aborted) {
      try {
        if (needList) await list();
        needList = await watchOnce();
        if (needList && !abort.signal.aborted) watch.interruptions.push(`watch ${path} at rv ${lastRv}: 410 Gone; listed again`);
      } catch (error) {
        if (abort.signal.aborted) return;
        watch.interruptions.push(`watch ${path}: ${(error as Error).message}; retrying`);
        await sleep(500);
      }
    }
  };
  run().catch((error: unknown) => watch.interruptions.push(`watch ${path} stopped: ${(error as Error).message}`));
  watch.stop = () => {
    abort.abort();
    controller?.abort();
  };
  return watch;
}

/** The identity of the entry of the highest priority: whom kopf lets run (none when two share it: kopf pauses both). */
function topPeer(object: KopfPeeringObject | undefined): string | undefined {
  const entries = Object.entries(object?.status ?? {}).filter((entry): entry is [string, PeerEntry] => entry[1] !== null);
  const top = Math.max(...entries.map(([, entry]) => entry.priority ?? 0));
  const first = entries.filter(([, entry]) => (entry.priority ?? 0) === top);
  return first.length === 1 ? first[0]?.[0] : undefined;
}

/** The first revision after `since` without `identity`'s entry: removed by its own process (lifetime 0 → null) or by a peer that found it dead. */
function entryRemoved(peering: PeeringWatch, identity: string, since: number): PeeringEvent | undefined {
  return peering.events.find((event) => event.at > since && event.type !== 'DELETED' && !event.object.status?.[identity]);
}

/** `identity`'s entry as last written before `before`, and when kopf's peers count it dead (lastseen + lifetime). */
function lastEntry(peering: PeeringWatch, identity: string, before: number): { entry?: PeerEntry; deadline?: number } {
  const entry = peering.events.filter((event) => event.at < before && event.object.status?.[identity]).at(-1)?.object.status?.[identity] ?? undefined;
  const deadline = entry?.lastseen ? Date.parse(entry.lastseen) + (entry.lifetime ?? 60) * 1000 : undefined;
  return { entry, deadline };
}

/** The heartbeats `pod` wrote, in arrival order. */
function beatsOf(recording: Recording, pod: string): Heartbeat[] {
  return heartbeats(recording, kopfPeering.heartbeat).filter((beat) => beat.holder === pod);
}

// ---------------------------------------------------------------------------
// The scenario

interface KopfScenario {
  namespace: string;
  recording: Recording;
  peering: PeeringWatch;
  /** The replicas' kopf identities (POD_ID: their pods' UIDs). */
  leaderId: string;
  standbyId: string;
}

/** Waits until the anchor ConfigMap (which carries kopf's finalizer while a daemon runs on it) is gone, taking the finalizer off a namespace being deleted. */
async function releaseAnchor(namespace: string): Promise<void> {
  for (let tries = 0; tries < 60; tries++) {
    try {
      kubectl(['-n', namespace, 'patch', 'configmap', 'kopf-operator-anchor', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    } catch (error) {
      if (/NotFound|not found/.test((error as Error).message)) return;
    }
    await sleep(1000);
  }
}

/**
 * A namespace of its own (restricted Pod Security; opted in to leaderhook, the
 * hook's Role bound, with `hook`), recorded from before the first object;
 * test/operators/rbac.yaml and kopf-operator.yaml's Role, binding and
 * KopfPeering; then kopf-operator-0 alone until it leads, then
 * kopf-operator-1, so that the standby never runs: it starts paused (kopf
 * pauses a peering operator until it has seen the peering) and its first look
 * shows the leader's entry.
 */
async function setUpKopf(t: TestContext, hook: boolean, extraArgs: string[] = [], leaderSpec: Partial<V1PodSpec> = {}): Promise<KopfScenario> {
  const ns = await createTestNamespace(hook ? 'kopf-hook' : 'kopf-control', {
    'pod-security.kubernetes.io/enforce': 'restricted',
    ...(hook ? INJECTION_LABEL : {}),
  });
  const namespace = ns.name;
  const peering = watchPeering(namespace);
  const recording = await record(namespace, hook ? [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER] : [OPERATOR_CONTAINER], []);
  t.after(async () => {
    await recording.stop();
    peering.stop();
    await ns.cleanup();
    await releaseAnchor(namespace);
  });
  await applyOperatorRbac(namespace);
  if (hook) await grantReleaseHook(namespace, 'test-operator');
  if (hook) await grantKopfPeering(namespace, 'test-operator');
  const objects = operatorObjects('kopf-operator');
  const statefulSet = objects.find((o) => o.kind === 'StatefulSet') as V1StatefulSet;
  await rbac.createNamespacedRole({ namespace, body: objects.find((o) => o.kind === 'Role') as V1Role });
  const binding = objects.find((o) => o.kind === 'RoleBinding') as V1RoleBinding;
  for (const subject of binding.subjects ?? []) subject.namespace = namespace;
  await rbac.createNamespacedRoleBinding({ namespace, body: binding });
  const body = objects.find((o) => o.kind === 'KopfPeering');
  await custom.createNamespacedCustomObject({ group: 'kopf.dev', version: 'v1', namespace, plural: 'kopfpeerings', body });

  const template = statefulSet.spec?.template;
  assert.ok(template?.spec, 'kopf-operator.yaml holds a StatefulSet with a pod template');
  const createPod = async (name: string, extraSpec: Partial<V1PodSpec> = {}): Promise<string> => {
    const spec = { ...structuredClone(template.spec!), ...extraSpec };
    for (const c of spec.containers) if (c.name === OPERATOR_CONTAINER) c.args = [...(c.args ?? []), ...extraArgs];
    const pod = await core.createNamespacedPod({ namespace, body: { metadata: { ...template.metadata, name }, spec } });
    return pod.metadata?.uid as string;
  };
  const leaderId = await createPod(LEADER, leaderSpec);
  await waitForRecorded(recording, `${LEADER} to log "became leader"`, async () => logOf(recording, LEADER, 'became leader'), 120_000);
  const standbyId = await createPod(STANDBY);
  const { leader, standby } = await waitForSteadyLeader(recording, kopfPeering.heartbeat);
  assert.deepEqual([leader, standby], [LEADER, STANDBY], 'the replica of priority 100 leads');
  await waitForRecorded(
    recording,
    `the standby's entry in KopfPeering/${kopfPeering.name}`,
    async () => peering.events.at(-1)?.object.status?.[standbyId],
    30_000,
  );
  return { namespace, recording, peering, leaderId, standbyId };
}

interface KopfFailover {
  deleteIssued: number;
  /** The standby's "became leader": kopf resumed it and its daemon started. */
  became: number;
  removed: PeeringEvent;
}

/** Deletes the leader pod; waits until the standby leads (and has written a heartbeat), the leader's entry is gone and the old pod object too. */
async function deleteLeader(scenario: KopfScenario, timeoutMs: number): Promise<KopfFailover> {
  const deleteIssued = Date.now();
  await core.deleteNamespacedPod({ name: LEADER, namespace: scenario.namespace });
  const failover = await standbyTakesOver(scenario, deleteIssued, timeoutMs);
  await waitForRecorded(scenario.recording, `pod ${LEADER} to be gone`, async () => podGone(scenario.recording, LEADER), 60_000);
  return failover;
}

/** Waits, from `since`, until the standby leads (and has written a heartbeat) and the leader's entry is gone. */
async function standbyTakesOver({ recording, peering, leaderId }: KopfScenario, since: number, timeoutMs: number): Promise<KopfFailover> {
  const became = await waitForRecorded(recording, `${STANDBY} to log "became leader"`, async () => logOf(recording, STANDBY, 'became leader'), timeoutMs);
  await waitForRecorded(recording, `${STANDBY} to write a heartbeat`, async () => beatsOf(recording, STANDBY)[0], 30_000);
  const removed = await waitForRecorded(recording, `${LEADER}'s peering entry to be gone`, async () => entryRemoved(peering, leaderId, since), 30_000);
  return { deleteIssued: since, became: became.at, removed };
}

/** Observes a second more, stops, and checks the recording and the peering watch: nothing lost, no split brain with the peering as the lock. */
async function finish({ recording, peering }: KopfScenario): Promise<void> {
  await sleep(1000);
  await recording.stop();
  peering.stop();
  assert.deepEqual(recording.errors, []);
  assert.deepEqual(
    peering.interruptions.filter((line) => line.includes('410')),
    [],
    'the peering watch lost nothing',
  );
  assert.ok(heartbeats(recording, kopfPeering.heartbeat).length > 0, 'heartbeats were recorded');
  const leases: ObservedWrite<V1Lease>[] = peering.events.map((event) => ({
    type: event.type,
    rv: event.rv,
    ...(event.relisted ? { relisted: true } : {}),
    object: { metadata: { name: kopfPeering.name }, spec: { holderIdentity: event.type === 'DELETED' ? undefined : topPeer(event.object) } },
  }));
  const violations = checkSplitBrain({ lock: kopfPeering, configMaps: recording.configMaps, leases });
  assert.deepEqual(
    violations.map((v) => v.explanation),
    [],
    `no split brain over KopfPeering/${kopfPeering.name} (as a Lease held by its top-priority entry)\n${summary(recording)}`,
  );
}

/** The hook log lines that tell of a release (or a would-be release) of a KopfPeering entry. */
function peeringReleaseLines(recording: Recording) {
  return recording.logs.filter(
    (line) =>
      line.container === RELEASE_HOOK_CONTAINER &&
      /releas/.test(line.msg) &&
      /KopfPeering\//.test(`${line.msg} ${JSON.stringify(line.fields)}`) &&
      !/no KopfPeering entry released/.test(line.msg),
  );
}

/**
 * leaderhook left kopf's peering alone: no LeaderLockReleased Event, no hook
 * line telling of a released entry, and the leader's entry was not removed by its hook.
 * This cluster's API server keeps no managedFields (a write's field manager
 * cannot be read back), so the removal is placed in time instead: on a clean
 * exit before the old pod's hook got its SIGTERM (the hook acts on nothing
 * before), after a kill only once the old pod, and so its hook, was gone.
 */
function assertHookLeftPeeringAlone(scenario: KopfScenario, failover: KopfFailover, hook: boolean, clean: boolean): void {
  const { recording } = scenario;
  const released = recording.events.filter((event) => event.object.reason === 'LeaderLockReleased');
  assert.deepEqual(
    released.map((event) => event.object.message),
    [],
    'no LeaderLockReleased Event',
  );
  const hookLines = recording.logs.filter((line) => line.container === RELEASE_HOOK_CONTAINER);
  assert.deepEqual(
    peeringReleaseLines(recording).map((line) => line.msg),
    [],
    'no hook released a KopfPeering entry',
  );
  if (clean && hook) {
    assertBefore({ label: 'entry gone', at: failover.removed.at }, { label: "the old pod's hook got SIGTERM", at: hookSignalTime(recording, LEADER) });
  } else if (!clean) {
    assertBefore({ label: 'old pod object gone', at: podGone(recording, LEADER)?.rv }, { label: 'entry gone', at: failover.removed.rv });
  }
  if (hook)
    assert.ok(
      hookLines.some((line) => line.pod === LEADER),
      `${LEADER}'s hook ran and was recorded`,
    );
}

function kopfMarks(scenario: KopfScenario, failover: KopfFailover, hook: boolean, start = 'delete issued'): Mark[] {
  const { recording, peering } = scenario;
  const { deleteIssued, removed } = failover;
  const { deadline } = lastEntry(peering, scenario.leaderId, removed.at);
  const resumed = recording.logs.find((line) => line.pod === STANDBY && line.at > deleteIssued && line.msg.startsWith('Resuming operations'));
  return [
    ...mark(start, deleteIssued),
    ...mark('old leader logged "stopping" (SIGTERM)', logOf(recording, LEADER, 'stopping')?.at),
    ...mark('old leader logged "signal ignored" (SIGTERM)', logOf(recording, LEADER, 'signal ignored')?.at),
    ...mark('old leader logged "exiting without cleanup" (SIGTERM)', logOf(recording, LEADER, 'exiting without cleanup')?.at),
    ...mark('old leader\'s daemon logged "paused"', logOf(recording, LEADER, 'paused')?.at),
    ...mark('old leader wrote its last heartbeat', beatsOf(recording, LEADER).at(-1)?.at),
    ...mark('old leader logged "stopped"', logOf(recording, LEADER, 'stopped')?.at),
    ...mark('old container seen exited (watch)', operatorExited(recording, LEADER)?.at),
    ...(hook ? hookMarks(hookSigtermLine(recording, LEADER)) : []),
    ...mark(`old leader's entry would expire (lastseen + ${LIFETIME_MS / 1000} s)`, deadline),
    ...mark("old leader's peering entry gone (watch)", removed.at),
    ...mark(`standby logged kopf's "Resuming operations after the pause"`, resumed?.at),
    ...mark('new leader logged "became leader"', failover.became),
    ...mark('new leader wrote its first heartbeat', beatsOf(recording, STANDBY)[0]?.at),
    ...mark('old pod object gone (watch)', podGone(recording, LEADER)?.at),
  ];
}

/**
 * The leader deleted: kopf's clean exit set its own entry to null after
 * SIGTERM ("stopping"), and the standby, the only other replica, led well
 * before the entry would have expired.
 */
async function cleanExit(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUpKopf(t, hook);
  const failover = await deleteLeader(scenario, 60_000);
  await finish(scenario);
  const { recording, peering } = scenario;
  printTimeline(t, `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader deleted`, kopfMarks(scenario, failover, hook), failover.deleteIssued, out);
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - failover.deleteIssued) / 1000).toFixed(2)} s after the delete`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  // the entry's removal is seen through a watch, which lags the operator's own log lines by a few
  // milliseconds: only the order that lag cannot reverse is asserted
  assertBefore({ label: '"stopping" of the old leader', at: logOf(recording, LEADER, 'stopping')?.at }, { label: 'entry gone', at: failover.removed.at });
  assert.ok(logOf(recording, LEADER, 'stopped'), 'the old leader stopped by itself (a clean exit)');
  const firstBeat = beatsOf(recording, STANDBY)[0];
  assertBefore({ label: 'entry gone', at: failover.removed.rv }, { label: "the new leader's first heartbeat", at: firstBeat?.rv });
  const { deadline } = lastEntry(peering, scenario.leaderId, failover.removed.at);
  assert.ok(
    deadline !== undefined && failover.became < deadline - 10_000,
    `the standby led (${failover.became}) well before the entry would have expired (${deadline})`,
  );
  assertHookLeftPeeringAlone(scenario, failover, hook, true);
}

/**
 * The leader deleted while its operator ignores SIGTERM: the kubelet SIGKILLs
 * it at the end of the grace period and kopf never removes its entry. Without
 * leaderhook the standby resumes only once the entry has expired, and removes
 * it itself. With it, the old pod's hook gets its SIGTERM too late for R1; but
 * the kubelet reports the deleted pod Failed, every container terminated,
 * before it is removed, and the standby's hook, if it reads the pod in that
 * window, removes the entry by R2; if the pod is gone first, nothing (no R3),
 * and the same wait.
 */
async function killedExit(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUpKopf(t, hook, ['--ignore-sigterm']);
  const failover = await deleteLeader(scenario, 120_000);
  await finish(scenario);
  const { recording } = scenario;
  printTimeline(t, `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader SIGKILLed`, kopfMarks(scenario, failover, hook), failover.deleteIssued, out);
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - failover.deleteIssued) / 1000).toFixed(2)} s after the delete`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  assert.ok(logOf(recording, LEADER, 'signal ignored'), 'the old leader ignored SIGTERM');
  assert.equal(logOf(recording, LEADER, 'stopped'), undefined, 'the old leader never stopped by itself');
  const byR2 = hook && recording.events.some((event) => event.object.reason === 'LeaderLockReleased' && /\(R2/.test(event.object.message ?? ''));
  t.diagnostic(byR2 ? "the standby's hook read the deleted pod Failed before it was gone: entry removed by R2" : 'the entry expired');
  if (byR2) {
    assertHookRemovedEntry(scenario, failover, 'R2');
    return;
  }
  assertWaitedForExpiry(scenario, failover);
  assertHookLeftPeeringAlone(scenario, failover, hook, false);
}

/** The entry stayed until kopf counted it dead, and the standby led only then. */
function assertWaitedForExpiry(scenario: KopfScenario, failover: KopfFailover): void {
  const { deadline } = lastEntry(scenario.peering, scenario.leaderId, failover.removed.at);
  assert.ok(deadline !== undefined, "the old leader's entry was recorded");
  // kopf's lastseen and the watch's arrival are both this machine's clock.
  assert.ok(failover.removed.at >= deadline, `the entry went (${failover.removed.at}) only once it had expired (${deadline})`);
  assert.ok(failover.became >= deadline, `the standby led (${failover.became}) only once the entry had expired (${deadline})`);
}

/**
 * A hook removed the leader's entry by `rule`: its LeaderLockReleased Event on
 * the old leader's pod (neither kopf nor any other writer records one), before
 * the entry would have expired; the standby led right after.
 */
function assertHookRemovedEntry(scenario: KopfScenario, failover: KopfFailover, rule: 'R1' | 'R2'): void {
  const { recording, peering, leaderId } = scenario;
  const released = recording.events.filter((event) => event.object.reason === 'LeaderLockReleased' && event.object.involvedObject?.name === LEADER);
  assert.ok(
    released.some((event) => new RegExp(`KopfPeering.${kopfPeering.name} \\(${rule}`).test(event.object.message ?? '')),
    `a LeaderLockReleased Event (${rule}) on ${LEADER}: ${JSON.stringify(released.map((event) => event.object.message))}`,
  );
  assert.equal(peeringReleaseLines(recording).filter((line) => /^released|SIGTERM: released/.test(line.msg)).length, 1, 'one hook released the entry, once');
  const { deadline } = lastEntry(peering, leaderId, failover.removed.at);
  assert.ok(deadline !== undefined && failover.removed.at < deadline, `the entry went (${failover.removed.at}) before it would have expired (${deadline})`);
  assert.ok(failover.became - failover.removed.at < 5_000, `the standby led (${failover.became}) right after the entry went (${failover.removed.at})`);
}

/**
 * The leader deleted while its operator exits at once on SIGTERM, without
 * kopf's cleanup (a process that crashes while stopping): its entry stays.
 * Without leaderhook the standby waits for it to expire; with it, the old
 * pod's hook gets its SIGTERM once the operator container has stopped, well
 * before the deadline, and removes the entry by R1.
 */
async function crashedExit(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUpKopf(t, hook, ['--exit-on-sigterm']);
  const failover = await deleteLeader(scenario, 120_000);
  await finish(scenario);
  const { recording } = scenario;
  printTimeline(
    t,
    `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader exits on SIGTERM without cleanup`,
    kopfMarks(scenario, failover, hook),
    failover.deleteIssued,
    out,
  );
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - failover.deleteIssued) / 1000).toFixed(2)} s after the delete`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  assert.ok(logOf(recording, LEADER, 'exiting without cleanup'), 'the old leader exited on SIGTERM');
  assert.equal(logOf(recording, LEADER, 'stopped'), undefined, "the old leader skipped kopf's cleanup");
  if (hook) assertHookRemovedEntry(scenario, failover, 'R1');
  else assertWaitedForExpiry(scenario, failover);
}

/**
 * The leader failed by its kubelet (activeDeadlineSeconds, set once it leads)
 * while it ignores SIGTERM: SIGKILL after its 2 s grace period, the pod Failed
 * and never deleted, the entry never removed by kopf. The deadline is set
 * right after a keep-alive of the leader's entry, so that the entry outlives
 * the kill by far. Without leaderhook the standby waits for the entry to
 * expire; with it, the standby's hook removes it by R2 once the pod is Failed.
 */
async function failedLeader(t: TestContext, hook: boolean): Promise<void> {
  const scenario = await setUpKopf(t, hook, ['--ignore-sigterm'], { terminationGracePeriodSeconds: 2 });
  const { namespace, recording, peering, leaderId } = scenario;
  const lastseenOf = (event: PeeringEvent | undefined) => Date.parse(event?.object.status?.[leaderId]?.lastseen ?? '') || 0;
  const seen = peering.events.length;
  if (lastseenOf(peering.events.at(-1)) + LIFETIME_MS - Date.now() < 40_000) {
    await waitForRecorded(
      recording,
      `a keep-alive of ${LEADER}'s entry`,
      async () => peering.events.slice(seen).find((e) => lastseenOf(e) > Date.now() - 5_000),
      70_000,
    );
  }
  const pod = await core.readNamespacedPod({ name: LEADER, namespace });
  const running = Math.ceil((Date.now() - new Date(pod.status?.startTime ?? Date.now()).getTime()) / 1000);
  const deadlineSet = Date.now();
  kubectl(['-n', namespace, 'patch', 'pod', LEADER, '--type=merge', '-p', JSON.stringify({ spec: { activeDeadlineSeconds: running + 1 } })]);
  const failover = await standbyTakesOver(scenario, deadlineSet, 120_000);
  await finish(scenario);
  printTimeline(
    t,
    `kopf-operator ${hook ? 'with' : 'without'} leaderhook, leader failed by its kubelet`,
    kopfMarks(scenario, failover, hook, 'activeDeadlineSeconds set'),
    deadlineSet,
    out,
  );
  t.diagnostic(`new leader ${STANDBY} +${((failover.became - deadlineSet) / 1000).toFixed(2)} s after activeDeadlineSeconds was set`);

  if (hook) assertInjected(recording);
  else assertNotInjected(recording);
  const failed = await core.readNamespacedPod({ name: LEADER, namespace });
  assert.equal(failed.status?.phase, 'Failed');
  assert.equal(failed.status?.reason, 'DeadlineExceeded');
  assert.equal(failed.metadata?.deletionTimestamp, undefined, 'the failed leader was never deleted');
  if (hook) assertHookRemovedEntry(scenario, failover, 'R2');
  else assertWaitedForExpiry(scenario, failover);
}

describe('kopf-operator (kopf peering: KopfPeering entries by priority, identity POD_ID)', () => {
  let uninstall: (() => Promise<void>) | undefined;
  before(async () => {
    kubectl(['apply', '--server-side', '-f', 'test/operators/manifests/kopf-peering-crds.yaml']);
    kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/kopfpeerings.kopf.dev', 'crd/clusterkopfpeerings.kopf.dev']);
    uninstall = await installLeaderhook();
  });
  after(async () => {
    await uninstall?.();
  });

  test('without leaderhook (control): the leader pod deleted, kopf removes its own entry, the standby leads at once', (t) => cleanExit(t, false));
  test('with leaderhook: the leader pod deleted, the same; the hook removes nothing', (t) => cleanExit(t, true));
  test('without leaderhook (control): the leader SIGKILLed at the end of its grace period, the standby leads only once the entry has expired', (t) =>
    killedExit(t, false));
  test("with leaderhook: the leader SIGKILLed, R1 too late; the standby's hook removes the entry by R2 if it reads the pod Failed before it is gone, else the same wait", (t) =>
    killedExit(t, true));
  test('without leaderhook (control): the leader exits on SIGTERM without cleanup, the standby leads only once the entry has expired', (t) =>
    crashedExit(t, false));
  test('with leaderhook: the leader exits on SIGTERM without cleanup, its hook removes the entry (R1) and the standby leads at once', (t) =>
    crashedExit(t, true));
  test('without leaderhook (control): the leader failed by its kubelet, never deleted, the standby leads only once the entry has expired', (t) =>
    failedLeader(t, false));
  test("with leaderhook: the leader failed by its kubelet, the standby's hook removes the entry (R2) and the standby leads", (t) => failedLeader(t, true));
});
