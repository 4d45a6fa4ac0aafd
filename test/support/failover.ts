/**
 * A leader failover on the real cluster, for the end-to-end tests with and
 * without leaderhook (test/e2e/baseline.test.ts, test/e2e/failover.test.ts,
 * test/e2e/rollout-restart.test.ts).
 *
 * Everything is observed, nothing is simulated (test/support/recorder.ts):
 * watches on pods, ConfigMaps, Leases and Events that never give up, the
 * JSON logs of the operators (and of the release hook, when injected)
 * followed per container run, and the heartbeat the leader writes every
 * 100 ms. From that recording the functions below find the leader, print the
 * timeline of a failover and, when the recording ends, run the split-brain
 * check (test/support/split-brain.ts): no two operator processes ever led at
 * once.
 *
 * The steps, marks and checks both tests share live here too (the failover
 * of each lock, the old leader's orderly stop, the handover to one new
 * leader), so each test states only what differs with and without
 * leaderhook.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CoreV1Event,
  loadAllYaml,
  type V1Affinity,
  type V1ConfigMap,
  type V1ContainerStatus,
  type V1Deployment,
  type V1Lease,
  type V1Pod,
  type V1PodTemplateSpec,
  type V1Role,
  type V1RoleBinding,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { apps, core, createTestNamespace, rbac, waitFor } from './kube.ts';
import { containerStatus } from './container-runs.ts';
import { type LogLine, type Observed, parseTime, type Recording, startRecording } from './recorder.ts';
import { checkSplitBrain, heartbeatOf, type LockHistory, type LockUnderTest, lockHolderOf, toRecordedHistory, type Violation } from './split-brain.ts';

const operatorsDir = join(import.meta.dirname, '..', 'operators');
/** The operator's container in test/operators/manifests. */
export const OPERATOR_CONTAINER = 'operator';
/** The native sidecar leaderhook's webhook injects. */
export const RELEASE_HOOK_CONTAINER = 'leaderhook-release';
/** Time for a freshly created Deployment to elect its first leader (image is local, pods start fast). */
export const electionTimeoutMs = 120_000;
/** Leader-for-life: pod termination + GC + the standby's backoff (capped at 16 s + 20 % jitter). Lease: 15 s lease + 2 s retry. */
export const failoverTimeoutMs = 120_000;
/**
 * operator-lib's standby retries Create after 1, 2, 4, 8 s, then every 16 s
 * (+ up to 20 % jitter): after 1 + 2 + 4 + 8 + 16 s of waiting it sleeps in
 * 16 s steps, the state every standby of a long-lived leader is in. How
 * long a failover then takes depends on where in that cycle the leader goes:
 * anywhere, so tests delete at a random point of it.
 */
export const backedOffMs = 32_000;

// What the recorder (test/support/recorder.ts) observes, as the tests and tools read it.
export { containerStatus } from './container-runs.ts';
export type { LogLine, Observed, Recording } from './recorder.ts';

/**
 * Records `namespace` from now on (test/support/recorder.ts): the logs of
 * `containers` run by run, and the history of `locks` (by default both
 * operators' of test/operators), which finishRecording checks for split
 * brain.
 */
export function record(namespace: string, containers: string[] = [OPERATOR_CONTAINER], locks: LockUnderTest[] = [lflLock, leaseLock]): Promise<Recording> {
  return startRecording(namespace, containers, locks);
}

export function operatorStatus(pod: V1Pod | undefined): V1ContainerStatus | undefined {
  return containerStatus(pod, OPERATOR_CONTAINER);
}

// ---------------------------------------------------------------------------
// Deploying an operator from test/operators

/**
 * How the operator runs: its Deployment of two replicas, or the same pod
 * template as two bare pods — nothing replaces a deleted pod, so the standby
 * that was waiting is the only candidate.
 */
export type Shape = 'deployment' | 'bare-pods';

export interface OperatorOptions {
  shape: Shape;
  /**
   * Removes the POD_NAME env of test/operators/manifests from the operator
   * container: in a namespace opted in to leaderhook the webhook adds it.
   */
  withoutPodNameEnv?: boolean;
  /** Extra arguments to the operator (e.g. `--ignore-sigterm`). */
  extraArgs?: string[];
  /** Extra pod annotations (e.g. leaderhook's grace-period annotation). */
  annotations?: Record<string, string>;
  /** The Deployment's replicas, instead of the manifest's 2. */
  replicas?: number;
  /** The pods' affinity (which nodes, apart from whom). */
  affinity?: V1Affinity;
}

/** Applies test/operators/rbac.yaml (ServiceAccount test-operator and the scaffold Roles) in `namespace`. */
export async function applyOperatorRbac(namespace: string): Promise<void> {
  for (const doc of loadAllYaml(readFileSync(join(operatorsDir, 'rbac.yaml'), 'utf8')) as { kind: string }[]) {
    switch (doc.kind) {
      case 'ServiceAccount':
        await core.createNamespacedServiceAccount({ namespace, body: doc as V1ServiceAccount });
        break;
      case 'Role':
        await rbac.createNamespacedRole({ namespace, body: doc as V1Role });
        break;
      case 'RoleBinding': {
        const binding = doc as V1RoleBinding;
        for (const subject of binding.subjects ?? []) subject.namespace = namespace;
        await rbac.createNamespacedRoleBinding({ namespace, body: binding });
        break;
      }
      default:
        throw new Error(`test/operators/rbac.yaml: unexpected kind ${doc.kind}`);
    }
  }
}

/** The Deployment of test/operators/manifests/<operator>.yaml, its pod template adjusted by `options`. */
export function operatorManifest(operator: string, options: Omit<OperatorOptions, 'shape'>): V1Deployment & { spec: { template: V1PodTemplateSpec } } {
  const [deployment] = loadAllYaml(readFileSync(join(operatorsDir, 'manifests', `${operator}.yaml`), 'utf8')) as V1Deployment[];
  assert.ok(deployment?.spec?.template?.spec, `test/operators/manifests/${operator}.yaml holds a Deployment`);
  const template = deployment.spec.template;
  for (const c of template.spec?.containers ?? []) {
    if (c.name !== OPERATOR_CONTAINER) continue;
    if (options.withoutPodNameEnv) c.env = c.env?.filter((e) => e.name !== 'POD_NAME');
    if (options.extraArgs) c.args = [...(c.args ?? []), ...options.extraArgs];
  }
  if (options.annotations) template.metadata = { ...template.metadata, annotations: { ...template.metadata?.annotations, ...options.annotations } };
  if (options.replicas !== undefined) deployment.spec.replicas = options.replicas;
  if (options.affinity && template.spec) template.spec.affinity = options.affinity;
  return deployment as V1Deployment & { spec: { template: V1PodTemplateSpec } };
}

/** Creates `operator` from test/operators/manifests in `namespace`, as a Deployment or two bare pods (`<operator>-a`, `-b`). */
export async function createOperator(namespace: string, operator: string, options: OperatorOptions): Promise<void> {
  const deployment = operatorManifest(operator, options);
  if (options.shape === 'deployment') {
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    return;
  }
  const { metadata, spec } = deployment.spec.template;
  for (const suffix of ['a', 'b']) {
    await core.createNamespacedPod({ namespace, body: { metadata: { ...metadata, name: `${operator}-${suffix}` }, spec } });
  }
}

/** test/operators/rbac.yaml, then the operator. */
export async function deployOperator(namespace: string, operator: string, options: OperatorOptions): Promise<void> {
  await applyOperatorRbac(namespace);
  await createOperator(namespace, operator, options);
}

export interface Scenario {
  namespace: string;
  recording: Recording;
}

/**
 * A namespace of its own (restricted Pod Security: the manifests must pass it
 * as they are), recorded from before the operator's first object exists, and
 * deleted after the test. `prepare` runs between the RBAC and the operator
 * (to bind the release hook's Role before the first pod starts).
 */
export async function setUpOperator(
  t: Pick<TestContext, 'after'>,
  init: {
    prefix: string;
    operator: string;
    options: OperatorOptions;
    labels?: Record<string, string>;
    containers?: string[];
    prepare?: (namespace: string) => Promise<void>;
  },
): Promise<Scenario> {
  const namespace = await createTestNamespace(init.prefix, { 'pod-security.kubernetes.io/enforce': 'restricted', ...init.labels });
  const recording = await record(namespace.name, init.containers, [leaderLockOf(init.operator)]);
  t.after(async () => {
    await recording.stop();
    await namespace.cleanup();
  });
  await applyOperatorRbac(namespace.name);
  await init.prepare?.(namespace.name);
  await createOperator(namespace.name, init.operator, init.options);
  return { namespace: namespace.name, recording };
}

// ---------------------------------------------------------------------------
// What the recording says

export interface Heartbeat {
  /** The writer's pod name. */
  holder: string;
  /** The writer's process (undefined for an operator that predates it: the split-brain check flags those). */
  processID?: string;
  seq: number;
  /** The leader's own time of the write. */
  at: number;
  rv: bigint;
}

/** The heartbeats of ConfigMap `name`, in arrival order (split-brain.ts reads them the same way). */
export function heartbeats(recording: Recording, name: string): Heartbeat[] {
  return recording.configMaps
    .filter((event) => event.type !== 'DELETED' && event.object.metadata?.name === name)
    .flatMap((event) => {
      const beat = heartbeatOf(event.object);
      return beat ? [{ holder: beat.pod, processID: beat.processID, seq: beat.seq, at: parseTime(beat.time), rv: event.rv }] : [];
    });
}

/** The pods whose heartbeats follow each other in write order, each once per turn: [old leader, new leader] for one handover. */
export function heartbeatWriters(recording: Recording, lock: LockUnderTest): string[] {
  const writers: string[] = [];
  const inWriteOrder = heartbeats(recording, lock.heartbeat).sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
  for (const beat of inWriteOrder) if (writers.at(-1) !== beat.holder) writers.push(beat.holder);
  return writers;
}

/** Log lines with message `msg` of `container` (the operator's by default), of any pod. */
export function loggedBy(recording: Recording, msg: string, container = OPERATOR_CONTAINER): LogLine[] {
  return recording.logs.filter((line) => line.container === container && line.msg === msg);
}

/** The first log line of `pod`'s `container` (the operator's by default) with message `msg`. */
export function logOf(recording: Recording, pod: string, msg: string, container = OPERATOR_CONTAINER): LogLine | undefined {
  return recording.logs.find((line) => line.pod === pod && line.container === container && line.msg === msg);
}

/** The release hook's line about its SIGTERM decision (every message of that path starts "SIGTERM:"). */
export function hookSigtermLine(recording: Recording, pod: string): LogLine | undefined {
  return recording.logs.find((line) => line.pod === pod && line.container === RELEASE_HOOK_CONTAINER && line.msg.startsWith('SIGTERM:'));
}

/** When `pod`'s hook got SIGTERM, by its own clock ("signalAt" of its decision line). */
export function hookSignalTime(recording: Recording, pod: string): number | undefined {
  const signalAt = hookSigtermLine(recording, pod)?.fields.signalAt;
  return typeof signalAt === 'string' ? Date.parse(signalAt) : undefined;
}

/** `LeaderLockReleased` Events about `pod` whose message names `rule` (R0–R3). */
export function releaseEvents(recording: Recording, pod: string, rule?: string): Observed<CoreV1Event>[] {
  return recording.events.filter(
    (event) =>
      event.type === 'ADDED' &&
      event.object.reason === 'LeaderLockReleased' &&
      event.object.involvedObject?.name === pod &&
      (rule === undefined || (event.object.message ?? '').includes(`(${rule}:`)),
  );
}

function historyOf(recording: Recording, lock: LockUnderTest): LockHistory {
  return { lock, configMaps: recording.configMaps, leases: recording.leases };
}

/** What the split-brain check finds so far for `lock`, by default for every lock of the recording (a benchmark counts them per trial; tests assert there are none). */
export function splitBrainViolations(recording: Recording, lock?: LockUnderTest): Violation[] {
  return (lock ? [lock] : recording.locks).flatMap((each) => checkSplitBrain(historyOf(recording, each)));
}

/**
 * The split-brain check over the whole recording, for `lock` or else every
 * lock of the recording whose heartbeats were recorded (at least one): no
 * two operator processes ever wrote heartbeats in turns, and each heartbeat
 * came from the process holding the lock at that revision
 * (test/support/split-brain.ts). On failure each failing lock's history is
 * saved as a file in the format of test/testdata/split-brain/ (in
 * LEADERHOOK_SPLIT_BRAIN_OUT, else a fresh temporary directory), ready to
 * become a fixture.
 */
export function assertNoSplitBrain(recording: Recording, lock?: LockUnderTest): void {
  const beating = (each: LockUnderTest) => heartbeats(recording, each.heartbeat).length > 0;
  const locks = lock ? [lock] : recording.locks.filter(beating);
  assert.ok(
    locks.length > 0 && locks.every(beating),
    `heartbeats of ${(lock ? [lock] : recording.locks).map((each) => `ConfigMap/${each.heartbeat}`).join(' or ')} were recorded: the split-brain check has something to check`,
  );
  const failed = locks.flatMap((each) => {
    const violations = checkSplitBrain(historyOf(recording, each));
    return violations.length > 0 ? [{ lock: each, violations }] : [];
  });
  if (failed.length === 0) return;
  const dir = process.env.LEADERHOOK_SPLIT_BRAIN_OUT ?? mkdtempSync(join(tmpdir(), 'leaderhook-split-brain-'));
  mkdirSync(dir, { recursive: true });
  const reports = failed.map(({ lock: each, violations }) => {
    const file = join(dir, `${recording.namespace}-${each.name}.json`);
    const recorded = toRecordedHistory(historyOf(recording, each), `recorded in namespace ${recording.namespace}: ${violations.length} violations`);
    writeFileSync(file, `${JSON.stringify({ ...recorded, expect: [] }, null, 1)}\n`);
    return `split brain over ${each.kind}/${each.name}: ${violations.length} violations\n${violations.map((v) => `- ${v.explanation}`).join('\n')}\nits history is saved in ${file}`;
  });
  const interruptions = recording.interruptions.length > 0 ? `\nrecording interruptions: ${recording.interruptions.join('; ')}` : '';
  assert.fail(`${reports.join('\n')}${interruptions}`);
}

export interface Mark {
  label: string;
  at: number;
}

/**
 * Prints `marks` as seconds after `zero` (test diagnostics) and, when `out`
 * names a file, appends them there as one JSON line.
 */
export function printTimeline(t: TestContext, scenario: string, marks: Mark[], zero: number, out = process.env.LEADERHOOK_BASELINE_OUT): void {
  const lines = [...marks].sort((a, b) => a.at - b.at).map((mark) => `${((mark.at - zero) / 1000).toFixed(3).padStart(8)} s  ${mark.label}`);
  t.diagnostic(`${scenario} failover timeline (seconds after the delete was issued):`);
  for (const line of lines) t.diagnostic(line);
  if (out) {
    const entry = {
      operator: scenario,
      recordedAt: new Date(zero).toISOString(),
      marks: marks.map((mark) => ({ label: mark.label, seconds: Number(((mark.at - zero) / 1000).toFixed(3)) })),
    };
    appendFileSync(out, `${JSON.stringify(entry)}\n`);
  }
}

export function mark(label: string, at: number | undefined): Mark[] {
  return at === undefined ? [] : [{ label, at }];
}

/** What was recorded so far, in a few lines: for failure messages. */
export function summary(recording: Recording): string {
  const pods = [...recording.podNow].map(
    ([name, pod]) => `${name}: ${pod ? (pod.status?.phase ?? 'no phase') : 'gone'}, ${recording.logs.filter((line) => line.pod === name).length} log lines`,
  );
  const errors = recording.errors.map((error) => error.message);
  return `recorded: ${recording.pods.length} pod, ${recording.configMaps.length} ConfigMap, ${recording.leases.length} Lease, ${recording.events.length} Event events; pods: ${pods.join('; ') || 'none'}${errors.length ? `; errors: ${errors.join('; ')}` : ''}${recording.interruptions.length ? `; interruptions: ${recording.interruptions.join('; ')}` : ''}`;
}

/** waitFor, with what the recording holds named when it times out. */
export async function waitForRecorded<T>(
  recording: Recording,
  description: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs: number,
): Promise<T> {
  try {
    return await waitFor(description, check, timeoutMs, 100);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${summary(recording)}`, { cause: error });
  }
}

/** Waits until exactly one pod logged "became leader", writes heartbeats, and the other pod is up and trying. */
export async function waitForSteadyLeader(recording: Recording, heartbeatName: string): Promise<{ leader: string; standby: string }> {
  const leader = await waitForRecorded(
    recording,
    'one pod to log "became leader"',
    async () => {
      const [first] = loggedBy(recording, 'became leader');
      return first?.pod;
    },
    electionTimeoutMs,
  );
  const standby = await waitForRecorded(
    recording,
    'the second pod to log "trying" and the leader to write 10 heartbeats',
    async () => {
      const other = loggedBy(recording, 'trying').find((line) => line.pod !== leader);
      const beats = heartbeats(recording, heartbeatName).filter((beat) => beat.holder === leader);
      return beats.length >= 10 && other?.pod;
    },
    electionTimeoutMs,
  );
  // The standby has had time to contend: it must still not lead.
  await sleep(3000);
  assert.deepEqual(
    loggedBy(recording, 'became leader').map((line) => line.pod),
    [leader],
    'exactly one pod logged "became leader"',
  );
  assert.deepEqual([...new Set(heartbeats(recording, heartbeatName).map((beat) => beat.holder))], [leader], 'heartbeats come only from the leader');
  return { leader, standby };
}

export function assertBefore(first: { label: string; at: number | bigint | undefined }, second: { label: string; at: number | bigint | undefined }): void {
  assert.ok(first.at !== undefined, `${first.label} was observed`);
  assert.ok(second.at !== undefined, `${second.label} was observed`);
  assert.ok(first.at <= second.at, `${first.label} (${first.at}) comes before ${second.label} (${second.at})`);
}

// ---------------------------------------------------------------------------
// The operators' leader locks

/**
 * A leader lock of an operator under test and the ConfigMap its leader writes
 * heartbeats to: what every scenario needs to follow leadership from lock
 * to lock.
 */
export interface LeaderLock<L> extends LockUnderTest {
  /** Every recorded event of this lock, in arrival order. */
  events: (recording: Recording) => Observed<L>[];
  /** The pod that holds the lock; undefined when nobody does (a leaderless Lease). */
  holderOf: (lock: L | undefined) => string | undefined;
}

/** operator-lib's leader-for-life lock: its one ownerReference names the leader pod (the split-brain check: by UID). */
export const lflLock: LeaderLock<V1ConfigMap> = {
  kind: 'ConfigMap',
  name: 'lfl-operator-lock',
  heartbeat: 'lfl-operator-lock-heartbeat',
  events: (recording) => recording.configMaps.filter((event) => event.object.metadata?.name === 'lfl-operator-lock'),
  holderOf: (cm) => lockHolderOf('ConfigMap', cm)?.pod,
};

/** controller-runtime's Lease: its holderIdentity is `hostname_uuid`, and a pod's hostname is its name (the split-brain check: the whole identity). */
export const leaseLock: LeaderLock<V1Lease> = {
  kind: 'Lease',
  name: 'lease-operator-lock',
  heartbeat: 'lease-operator-lock-heartbeat',
  events: (recording) => recording.leases.filter((event) => event.object.metadata?.name === 'lease-operator-lock'),
  holderOf: (lease) => lockHolderOf('Lease', lease)?.pod,
};

/** The lock each operator of test/operators elects its leader by. */
export function leaderLockOf(operator: string): LeaderLock<V1ConfigMap> | LeaderLock<V1Lease> {
  switch (operator) {
    case 'lfl-operator':
      return lflLock;
    case 'lease-operator':
      return leaseLock;
    default:
      throw new Error(`no leader lock known for operator ${operator} (test/operators has lfl-operator and lease-operator)`);
  }
}

/** The pod `name` as last seen by the recording; asserts it was seen with a UID. */
export function observedPod(recording: Recording, name: string): V1Pod {
  const pod = recording.podNow.get(name);
  assert.ok(pod?.metadata?.uid, `pod ${name} was observed`);
  return pod;
}

/** The leader-for-life lock, read from the API, names `pod` as operator-lib writes it. */
export async function assertLockOwnedBy(namespace: string, pod: V1Pod): Promise<void> {
  const lock = await core.readNamespacedConfigMap({ name: lflLock.name, namespace });
  assert.deepEqual(
    lock.metadata?.ownerReferences?.map(({ apiVersion, kind, name, uid, controller }) => ({ apiVersion, kind, name, uid, controller: controller ?? false })),
    [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid, controller: false }],
    'the lock has exactly one ownerReference, the leader pod, without the controller flag',
  );
}

/** Waits until the Lease has been recorded and asserts that `leader` holds it. */
export async function assertLeaseHeldBy(recording: Recording, leader: string): Promise<void> {
  const lease = await waitForRecorded(recording, 'the lease', async () => leaseLock.events(recording).at(-1)?.object, 10_000);
  assert.equal(leaseLock.holderOf(lease), leader, `lease holderIdentity ${lease.spec?.holderIdentity} is the leader's hostname_uuid`);
}

/**
 * Waits until the standby's backoff has reached its 16 s cap, then a random
 * part of one more cycle: the delete lands anywhere in the standby's retry
 * cycle, as it would in the field.
 */
export async function waitUntilBackedOff(recording: Recording, standby: string): Promise<void> {
  const tried = logOf(recording, standby, 'trying');
  assert.ok(tried, `standby ${standby} logged "trying"`);
  const waitMs = tried.at + backedOffMs + Math.random() * 16_000 - Date.now();
  if (waitMs > 0) await sleep(waitMs);
}

// ---------------------------------------------------------------------------
// A failover, step by step

/** The first lock event after `since` that names a holder other than `leader`: the takeover. */
export function waitForTakeover<L>(
  recording: Recording,
  lock: LeaderLock<L>,
  leader: string,
  since: number,
  timeoutMs = failoverTimeoutMs,
): Promise<Observed<L>> {
  return waitForRecorded(
    recording,
    `another pod to hold ${lock.kind}/${lock.name}`,
    async () =>
      lock.events(recording).find((event) => {
        const holder = event.type === 'DELETED' ? undefined : lock.holderOf(event.object);
        return event.at > since && holder !== undefined && holder !== leader;
      }),
    timeoutMs,
  );
}

/** Waits until `newLeader` logged "became leader" and wrote a heartbeat. */
export async function waitForNewLeaderRunning<L>(recording: Recording, lock: LeaderLock<L>, newLeader: string): Promise<void> {
  await waitForRecorded(
    recording,
    'the new leader to log "became leader" and write a heartbeat',
    async () => logOf(recording, newLeader, 'became leader') && heartbeats(recording, lock.heartbeat).some((beat) => beat.holder === newLeader),
    failoverTimeoutMs,
  );
}

export function waitForPodGone(recording: Recording, pod: string): Promise<Observed<V1Pod>> {
  return waitForRecorded(recording, `pod ${pod} to be gone`, async () => podGone(recording, pod), failoverTimeoutMs);
}

export interface Takeover<L> {
  /** Local time just before the delete was sent. */
  deleteIssued: number;
  /** The lock event that first named the new leader. */
  taken: Observed<L>;
  newLeader: string;
}

/**
 * Deletes the leader pod and waits until another pod holds the lock, leads
 * (logged "became leader", wrote a heartbeat), and the old pod object is gone.
 */
export async function deleteLeader<L>(scenario: Scenario, lock: LeaderLock<L>, leader: string): Promise<Takeover<L>> {
  const { namespace, recording } = scenario;
  const deleteIssued = Date.now();
  await core.deleteNamespacedPod({ name: leader, namespace });
  const taken = await waitForTakeover(recording, lock, leader, deleteIssued);
  const newLeader = lock.holderOf(taken.object) ?? '';
  await waitForNewLeaderRunning(recording, lock, newLeader);
  await waitForPodGone(recording, leader);
  return { deleteIssued, taken, newLeader };
}

export interface Failover<L> extends Takeover<L> {
  leader: string;
  /** The pod that was waiting when the leader was deleted. */
  standby: string;
}

/**
 * The leader-for-life failover of every scenario, up to the new leader
 * running: one steady leader whose lock names it (and, with two bare pods, a
 * standby backed off to its 16 s cap), then its pod deleted.
 */
export async function failOverLfl(scenario: Scenario, shape: Shape): Promise<Failover<V1ConfigMap>> {
  const { namespace, recording } = scenario;
  const { leader, standby } = await waitForSteadyLeader(recording, lflLock.heartbeat);
  if (shape === 'bare-pods') await waitUntilBackedOff(recording, standby);
  await assertLockOwnedBy(namespace, observedPod(recording, leader));
  return { leader, standby, ...(await deleteLeader(scenario, lflLock, leader)) };
}

/** The Lease failover of every scenario, up to the new leader running: one steady leader holding the Lease, then its pod deleted. */
export async function failOverLease(scenario: Scenario): Promise<Failover<V1Lease>> {
  const { leader, standby } = await waitForSteadyLeader(scenario.recording, leaseLock.heartbeat);
  await assertLeaseHeldBy(scenario.recording, leader);
  return { leader, standby, ...(await deleteLeader(scenario, leaseLock, leader)) };
}

/**
 * Observes a second more (heartbeats of the new leader), stops the
 * recording, asserts it lost nothing and runs the split-brain check on it.
 */
export async function finishRecording(recording: Recording): Promise<void> {
  await sleep(1000);
  await recording.stop();
  assert.deepEqual(recording.errors, []);
  assertNoSplitBrain(recording);
}

// ---------------------------------------------------------------------------
// Reading a failover off the recording

/** The first pod event that shows `pod`'s operator container terminated. */
export function operatorExited(recording: Recording, pod: string): Observed<V1Pod> | undefined {
  return recording.pods.find((event) => event.object.metadata?.name === pod && operatorStatus(event.object)?.state?.terminated);
}

export function podGone(recording: Recording, pod: string): Observed<V1Pod> | undefined {
  return recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === pod);
}

/** The first deletion of the lock (the ConfigMap lock: by the GC or a release hook). */
export function lockGone<L>(recording: Recording, lock: LeaderLock<L>): Observed<L> | undefined {
  return lock.events(recording).find((event) => event.type === 'DELETED');
}

export function lastHeartbeatOf<L>(recording: Recording, lock: LeaderLock<L>, pod: string): Heartbeat | undefined {
  return heartbeats(recording, lock.heartbeat)
    .filter((beat) => beat.holder === pod)
    .at(-1);
}

export function firstHeartbeatOf<L>(recording: Recording, lock: LeaderLock<L>, pod: string): Heartbeat | undefined {
  return heartbeats(recording, lock.heartbeat).find((beat) => beat.holder === pod);
}

/** "new leader X is the standby that was waiting" (it tried before the delete), or the Deployment's replacement. */
export function whoLeads(recording: Recording, newLeader: string, deleteIssued: number): string {
  const waiting = loggedBy(recording, 'trying').some((line) => line.pod === newLeader && line.at < deleteIssued);
  return `new leader ${newLeader} is ${waiting ? 'the standby that was waiting' : 'the replacement pod the Deployment created'}`;
}

/** The old leader's last renewal of the Lease, and when the lease would run out without another. */
export function lastRenewal(recording: Recording, leader: string): { renewedAt?: number; durationSeconds?: number; expiresAt?: number } {
  const spec = leaseLock
    .events(recording)
    .filter((event) => leaseLock.holderOf(event.object) === leader)
    .at(-1)?.object.spec;
  const renewedAt = spec?.renewTime ? new Date(spec.renewTime).getTime() : undefined;
  const durationSeconds = spec?.leaseDurationSeconds;
  return { renewedAt, durationSeconds, expiresAt: renewedAt === undefined ? undefined : renewedAt + (durationSeconds ?? 0) * 1000 };
}

// Timeline marks every scenario shares; each scenario adds its own between them.

/** The delete and the old leader's stop as it logged it. */
export function oldLeaderMarks<L>(recording: Recording, lock: LeaderLock<L>, leader: string, deleteIssued: number): Mark[] {
  return [
    ...mark('delete issued', deleteIssued),
    ...mark('old leader logged "stopping" (SIGTERM)', logOf(recording, leader, 'stopping')?.at),
    ...mark('old leader logged "signal ignored" (SIGTERM)', logOf(recording, leader, 'signal ignored')?.at),
    ...mark('old leader wrote its last heartbeat', lastHeartbeatOf(recording, lock, leader)?.at),
    ...mark('old leader logged "stopped"', logOf(recording, leader, 'stopped')?.at),
  ];
}

/** The Lease's way from the old leader's last renewal to the new holder; `expiry` names the old lease's end. */
export function leaseMarks(recording: Recording, leader: string, taken: Takeover<V1Lease>, expiry: string): Mark[] {
  const renewal = lastRenewal(recording, leader);
  const acquireTime = taken.taken.object.spec?.acquireTime;
  return [
    ...mark('lease last renewed by the old leader (renewTime)', renewal.renewedAt),
    ...mark(`${expiry} (renewTime + ${renewal.durationSeconds} s)`, renewal.expiresAt),
    ...mark(`lease acquired by ${taken.newLeader} (acquireTime)`, acquireTime ? new Date(acquireTime).getTime() : undefined),
    ...mark('lease holder change seen (watch)', taken.taken.at),
  ];
}

/** The new leader's start. */
export function newLeaderMarks<L>(recording: Recording, lock: LeaderLock<L>, newLeader: string): Mark[] {
  return [
    ...mark('new leader logged "became leader"', logOf(recording, newLeader, 'became leader')?.at),
    ...mark('new leader wrote its first heartbeat', firstHeartbeatOf(recording, lock, newLeader)?.at),
  ];
}

/** operator-lib's own lines of the new leader up to its win, from 20 s before the delete: its backoff, retry by retry. */
export function operatorLibRetryMarks(recording: Recording, newLeader: string, deleteIssued: number): Mark[] {
  const became = logOf(recording, newLeader, 'became leader');
  return recording.logs
    .filter(
      (line) =>
        line.pod === newLeader &&
        line.container === OPERATOR_CONTAINER &&
        line.at > deleteIssued - 20_000 &&
        line.at < (became?.at ?? Number.POSITIVE_INFINITY) &&
        String(line.fields.logger).endsWith('/leader') &&
        line.fields.error === undefined,
    )
    .map((line) => ({ label: `  new leader, operator-lib: ${JSON.stringify(line.msg)}`, at: line.at }));
}

// Assertions every scenario shares.

/**
 * The old leader stopped in order, on the SIGTERM the delete caused: it
 * logged "stopping", wrote its last heartbeat, logged "stopped", and its
 * container was seen exited before its pod object was gone.
 */
export function assertOrderlyStop<L>(recording: Recording, lock: LeaderLock<L>, leader: string, deleteIssued: number): void {
  const stopping = logOf(recording, leader, 'stopping');
  const stopped = logOf(recording, leader, 'stopped');
  assertBefore({ label: 'delete issued', at: deleteIssued }, { label: '"stopping"', at: stopping?.at });
  assertBefore({ label: '"stopping"', at: stopping?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'last heartbeat of the old leader', at: lastHeartbeatOf(recording, lock, leader)?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'container exited', at: operatorExited(recording, leader)?.rv }, { label: 'pod object gone', at: podGone(recording, leader)?.rv });
}

/** Exactly one leader process at every heartbeat of the whole recording, and `holders` the pods that led, in turn. */
export function assertOneLeaderThroughout<L>(recording: Recording, lock: LeaderLock<L>, holders: string[]): void {
  assertNoSplitBrain(recording, lock);
  assert.deepEqual(heartbeatWriters(recording, lock), holders, 'the sequence of heartbeat writers');
}

/**
 * Leadership moved from `leader` to another pod, once: the new leader began
 * only after the old one had stopped, exactly those two pods ever led, and
 * exactly one led at every heartbeat.
 */
export function assertHandover<L>(recording: Recording, lock: LeaderLock<L>, leader: string, newLeader: string): void {
  assertBefore(
    { label: '"stopped" of the old leader', at: logOf(recording, leader, 'stopped')?.at },
    { label: '"became leader" of the new leader', at: logOf(recording, newLeader, 'became leader')?.at },
  );
  assert.notEqual(newLeader, leader);
  assert.deepEqual(
    [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
    [leader, newLeader],
    'two pods ever logged "became leader": the old leader, then the new one',
  );
  assertOneLeaderThroughout(recording, lock, [leader, newLeader]);
}

/** The new leader-for-life lock has one ownerReference, the new leader pod by UID, and came after the old lock was gone. */
export function assertNewLock(recording: Recording, taken: Takeover<V1ConfigMap>): void {
  assertBefore({ label: 'lock ConfigMap gone', at: lockGone(recording, lflLock)?.rv }, { label: 'new lock created', at: taken.taken.rv });
  const owners = taken.taken.object.metadata?.ownerReferences;
  assert.equal(owners?.length, 1);
  assert.equal(owners?.[0]?.uid, recording.podNow.get(taken.newLeader)?.metadata?.uid, 'the new lock is owned by the new leader pod (UID)');
}
