/**
 * The kopf operator's failover, as test/e2e/kopf-operator.test.ts and
 * `npm run bench:kopf` run it: two bare pods of the StatefulSet template of
 * test/operators/manifests/kopf-operator.yaml in a namespace of their own
 * (a StatefulSet would bring a deleted leader back under its name and
 * priority), the KopfPeering object watched from before it exists, and the
 * failover read off the recording: when the leader's entry went, who took
 * over, and whether any heartbeat was written by a replica kopf did not let run.
 * kopf has no lock: its peering is followed as a Lease held by the entry of the
 * highest priority (test/support/kopf-peering.ts).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, type V1PodSpec, type V1PodTemplateSpec, type V1Role, type V1RoleBinding, type V1StatefulSet, Watch } from '@kubernetes/client-node';
import { type KopfPeeringObject, type PeerEntry, peeringAsLease } from './kopf-peering.ts';
import { core, createTestNamespace, kubeConfig, rbac } from './kube.ts';
import { failByDeadline, grantKopfPeering, grantReleaseHook, holdTerminating, INJECTION_LABEL, kubectl, releaseTerminating } from './leaderhook.ts';
import { applyOperatorRbac, kopfPeering, OPERATOR_CONTAINER, operatorObjects, RELEASE_HOOK_CONTAINER, record } from './operators.ts';
import type { Recording } from './recorder.ts';
import { type Heartbeat, heartbeats, hookSigtermLine, logOf, operatorExited, podGone, releaseEvents, waitForRecorded } from './recording.ts';
import { checkSplitBrain, type ObservedWrite, type Violation } from './split-brain.ts';
import { waitForSteadyLeader } from './takeover.ts';
import { hookMarks, type Mark, mark } from './timeline.ts';
import { waitFor } from './wait.ts';

export const LEADER = 'kopf-operator-0';
export const STANDBY = 'kopf-operator-1';
/** kopf's default peering lifetime (PeeringSettings.lifetime), which the manifest keeps. */
export const LIFETIME_MS = 60_000;

export interface PeeringEvent extends ObservedWrite<KopfPeeringObject> {
  /** Local time the event arrived. */
  at: number;
}
export interface PeeringWatch {
  events: PeeringEvent[];
  interruptions: string[];
  /** Once its first list has answered: a write after that is seen by the watch, one before only in the list. */
  listed: boolean;
  stop: () => void;
}

/** The custom-objects client, made on use: the cluster is connected only after the importing file's imports. */
const customObjects = () => kubeConfig.makeApiClient(CustomObjectsApi);

// ---------------------------------------------------------------------------
// The KopfPeering object, watched from before it exists

/**
 * Watches the namespace's KopfPeering objects for as long as the test runs:
 * a watch that ends (client-node closes one silent for 30 s; keep-alives come
 * every 25 s or so) resumes at the last resourceVersion; 410 Gone lists again
 * and marks what it finds `relisted`, which the split-brain check flags.
 */
function watchPeering(namespace: string): PeeringWatch {
  const custom = customObjects();
  const path = `/apis/kopf.dev/v1/namespaces/${namespace}/kopfpeerings`;
  const watch: PeeringWatch = { events: [], interruptions: [], listed: false, stop: () => {} };
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
    watch.listed = true;
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

/** The first revision after `since` without `identity`'s entry: removed by its own process (lifetime 0 → null) or by a peer that found it dead. */
export function entryRemoved(peering: PeeringWatch, identity: string, since: number): PeeringEvent | undefined {
  return peering.events.find((event) => event.at > since && event.type !== 'DELETED' && !event.object.status?.[identity]);
}

/** `identity`'s entry as last written before `before`, and when kopf's peers count it dead (lastseen + lifetime). */
export function lastEntry(peering: PeeringWatch, identity: string, before: number): { entry?: PeerEntry; deadline?: number } {
  const entry = peering.events.filter((event) => event.at < before && event.object.status?.[identity]).at(-1)?.object.status?.[identity] ?? undefined;
  const deadline = entry?.lastseen ? Date.parse(entry.lastseen) + (entry.lifetime ?? 60) * 1000 : undefined;
  return { entry, deadline };
}

/** The heartbeats `pod` wrote, in arrival order. */
export function beatsOf(recording: Recording, pod: string): Heartbeat[] {
  return heartbeats(recording, kopfPeering.heartbeat).filter((beat) => beat.holder === pod);
}

// ---------------------------------------------------------------------------
// The scenario

export interface KopfScenario {
  namespace: string;
  recording: Recording;
  peering: PeeringWatch;
  /** The replicas' kopf identities (POD_ID: their pods' UIDs). */
  leaderId: string;
  standbyId: string;
}

/** Waits until the anchor ConfigMap (which carries kopf's finalizer while a daemon runs on it) is gone, taking the finalizer off a namespace being deleted. */
export async function releaseAnchor(namespace: string): Promise<void> {
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
 * kopf-operator.yaml's Role and binding in `namespace` (test/operators/rbac.yaml
 * applied before), then its KopfPeering once `beforePeering` has resolved;
 * resolves with the StatefulSet's pod template.
 */
export async function applyKopfObjects(
  namespace: string,
  beforePeering: () => Promise<unknown> = async () => {},
): Promise<V1PodTemplateSpec & { spec: V1PodSpec }> {
  const objects = operatorObjects('kopf-operator');
  const statefulSet = objects.find((o) => o.kind === 'StatefulSet') as V1StatefulSet;
  await rbac.createNamespacedRole({ namespace, body: objects.find((o) => o.kind === 'Role') as V1Role });
  const binding = objects.find((o) => o.kind === 'RoleBinding') as V1RoleBinding;
  for (const subject of binding.subjects ?? []) subject.namespace = namespace;
  await rbac.createNamespacedRoleBinding({ namespace, body: binding });
  const body = objects.find((o) => o.kind === 'KopfPeering');
  await beforePeering();
  await customObjects().createNamespacedCustomObject({ group: 'kopf.dev', version: 'v1', namespace, plural: 'kopfpeerings', body });
  const template = statefulSet.spec?.template;
  assert.ok(template?.spec, 'kopf-operator.yaml holds a StatefulSet with a pod template');
  return template as V1PodTemplateSpec & { spec: V1PodSpec };
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
export async function setUpKopf(
  defer: (cleanup: () => Promise<void>) => void,
  hook: boolean,
  extraArgs: string[] = [],
  leaderSpec: Partial<V1PodSpec> = {},
): Promise<KopfScenario> {
  const ns = await createTestNamespace(hook ? 'kopf-hook' : 'kopf-control', {
    'pod-security.kubernetes.io/enforce': 'restricted',
    ...(hook ? INJECTION_LABEL : {}),
  });
  const namespace = ns.name;
  const peering = watchPeering(namespace);
  const recording = await record(namespace, hook ? [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER] : [OPERATOR_CONTAINER], []);
  defer(async () => {
    await recording.stop();
    peering.stop();
    await ns.cleanup();
    await releaseAnchor(namespace);
  });
  await applyOperatorRbac(namespace);
  if (hook) await grantReleaseHook(namespace, 'test-operator');
  if (hook) await grantKopfPeering(namespace, 'test-operator');
  // created before the watch's first list answered, its creation and first writes would be seen only in
  // that list, and the split-brain check could not rule out a second leader before it (a loaded API server)
  const template = await applyKopfObjects(namespace, () =>
    waitFor('the KopfPeering watch to list before the object exists', async () => peering.listed, 60_000, 100),
  );
  const createPod = async (name: string, extraSpec: Partial<V1PodSpec> = {}): Promise<string> => {
    const spec = { ...structuredClone(template.spec), ...extraSpec };
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

export interface KopfFailover {
  deleteIssued: number;
  /** The standby's "became leader": kopf resumed it and its daemon started. */
  became: number;
  removed: PeeringEvent;
}

/** Deletes the leader pod; waits until the standby leads (and has written a heartbeat), the leader's entry is gone and the old pod object too. */
export async function deleteLeader(scenario: KopfScenario, timeoutMs: number, { heldTerminating = false } = {}): Promise<KopfFailover> {
  const { namespace, recording } = scenario;
  const deleteAndTakeOver = async () => {
    const deleteIssued = Date.now();
    await core.deleteNamespacedPod({ name: LEADER, namespace });
    return standbyTakesOver(scenario, deleteIssued, timeoutMs);
  };
  let failover: KopfFailover;
  if (!heldTerminating) {
    failover = await deleteAndTakeOver();
  } else {
    const leaderUid = (await core.readNamespacedPod({ name: LEADER, namespace })).metadata?.uid;
    holdTerminating(namespace, LEADER);
    // From here on the finalizer must go whatever happens, or the namespace could never be deleted.
    try {
      failover = await deleteAndTakeOver();
      const old = await core.readNamespacedPod({ name: LEADER, namespace });
      assert.equal(old.metadata?.uid, leaderUid, 'the old leader pod object still exists while the standby leads');
      assert.ok(old.metadata?.deletionTimestamp, 'the old leader pod is Terminating');
    } finally {
      releaseTerminating(namespace, LEADER);
    }
  }
  await waitForRecorded(recording, `pod ${LEADER} to be gone`, async () => podGone(recording, LEADER), 60_000);
  return failover;
}

/** Waits, from `since`, until the standby leads (and has written a heartbeat) and the leader's entry is gone. */
export async function standbyTakesOver({ recording, peering, leaderId }: KopfScenario, since: number, timeoutMs: number): Promise<KopfFailover> {
  const became = await waitForRecorded(recording, `${STANDBY} to log "became leader"`, async () => logOf(recording, STANDBY, 'became leader'), timeoutMs);
  await waitForRecorded(recording, `${STANDBY} to write a heartbeat`, async () => beatsOf(recording, STANDBY)[0], 30_000);
  const removed = await waitForRecorded(recording, `${LEADER}'s peering entry to be gone`, async () => entryRemoved(peering, leaderId, since), 30_000);
  return { deleteIssued: since, became: became.at, removed };
}

/** The hook log lines that tell of a release (or a would-be release) of a KopfPeering entry. */
export function peeringReleaseLines(recording: Recording) {
  return recording.logs.filter(
    (line) =>
      line.container === RELEASE_HOOK_CONTAINER &&
      /releas/.test(line.msg) &&
      /KopfPeering\//.test(`${line.msg} ${JSON.stringify(line.fields)}`) &&
      !/no KopfPeering entry released/.test(line.msg),
  );
}

export function kopfMarks(scenario: KopfScenario, failover: KopfFailover, hook: boolean, start = 'delete issued'): Mark[] {
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
 * Stops recording and checks what was recorded: the split-brain violations
 * with the peering as the lock (every heartbeat written by the replica whose
 * entry has the highest priority, as of the peering's latest revision before
 * it), and what the record may have missed.
 */
export async function stopAndCheck({ recording, peering }: KopfScenario): Promise<{ violations: Violation[]; lost: string[]; heartbeats: number }> {
  await sleep(1000);
  await recording.stop();
  peering.stop();
  return {
    violations: checkSplitBrain({ lock: kopfPeering, configMaps: recording.configMaps, leases: peering.events.map(peeringAsLease) }),
    lost: [...recording.errors.map(String), ...peering.interruptions.filter((line) => line.includes('410'))],
    heartbeats: heartbeats(recording, kopfPeering.heartbeat).length,
  };
}

/**
 * Fails the leader by its kubelet: activeDeadlineSeconds set to just past
 * its running time, right after a keep-alive of its entry (waiting for one if
 * the entry has less than 40 s of its lifetime left), so that the entry
 * outlives the kill by far. Resolves with when the deadline was set.
 */
export async function failLeaderByDeadline({ namespace, recording, peering, leaderId }: KopfScenario): Promise<number> {
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
  return failByDeadline(namespace, LEADER);
}

/** Which hook rule removed the leader's entry, from the LeaderLockReleased Event on its pod; undefined when no hook did. */
export function entryReleasedBy(recording: Recording): 'R1' | 'R2' | undefined {
  const kopf = releaseEvents(recording, LEADER).filter((event) => /KopfPeering/.test(event.object.message ?? ''));
  return (['R1', 'R2'] as const).find((rule) => kopf.some((event) => event.object.message?.includes(`(${rule}:`)));
}
