/**
 * Recording a leader failover on the real cluster, for the end-to-end tests
 * with and without leaderhook (test/e2e/baseline.test.ts,
 * test/e2e/failover.test.ts).
 *
 * Everything is observed, nothing is simulated: watches on pods, ConfigMaps,
 * Leases and Events that resume where they left off, the JSON logs of the
 * operators (and of the release hook, when injected) followed live, and the
 * heartbeat the leader writes every 100 ms. From that recording the functions
 * below find the leader, check that exactly one pod led at every heartbeat,
 * and print the timeline of a failover.
 *
 * The steps, marks and checks both tests share live here too (the failover
 * of each lock, the old leader's orderly stop, the handover to one new
 * leader), so each test states only what differs with and without
 * leaderhook.
 */
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CoreV1Event,
  loadAllYaml,
  type V1ConfigMap,
  type V1ContainerStatus,
  type V1Deployment,
  type V1Lease,
  type V1Pod,
  type V1PodTemplateSpec,
  type V1Role,
  type V1RoleBinding,
  type V1ServiceAccount,
  Watch,
} from '@kubernetes/client-node';
import { apps, core, createTestNamespace, kubeConfig, rbac, waitFor } from './kube.ts';

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

// ---------------------------------------------------------------------------
// Observation: watches that survive reconnects, and the containers' log streams

export interface Observed<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: T;
  /** Local time the event arrived (ms since the epoch). */
  at: number;
  /**
   * The object's resourceVersion at this event. On one etcd every write gets
   * the next revision of a single counter, so resourceVersions of different
   * resources order their writes; the API calls them opaque, and these tests
   * rely on it only for the single-etcd clusters they run on.
   */
  rv: bigint;
}

export interface LogLine {
  pod: string;
  container: string;
  /** The line's own time ("ts" of the operators, "time" of the hook; the node is this machine). */
  at: number;
  msg: string;
  fields: Record<string, unknown>;
}

export interface Recording {
  pods: Observed<V1Pod>[];
  configMaps: Observed<V1ConfigMap>[];
  leases: Observed<V1Lease>[];
  events: Observed<CoreV1Event>[];
  logs: LogLine[];
  /** The last state seen of each pod; undefined once it is gone. */
  podNow: Map<string, V1Pod | undefined>;
  errors: Error[];
  stop: () => Promise<void>;
}

/** Parses an RFC 3339 time with up to nanosecond digits into fractional ms since the epoch. */
export function parseTime(value: string): number {
  const match = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(value);
  if (!match) throw new Error(`not an RFC 3339 time: ${JSON.stringify(value)}`);
  const whole = Date.parse(`${match[1]}${match[3]}`);
  const fraction = match[2] ? Number(`0.${match[2]}`) * 1000 : 0;
  return whole + fraction;
}

/**
 * Watches `path` from the start (a fresh namespace: every object arrives) and
 * keeps watching across server and client timeouts by resuming at the last
 * resourceVersion seen, so no event is lost between reconnects.
 */
function watchAll<T extends { metadata?: { resourceVersion?: string } }>(
  path: string,
  sink: Observed<T>[],
  onEvent: (event: Observed<T>) => void,
  errors: Error[],
): () => void {
  let stopped = false;
  let lastRv: string | undefined;
  let controller: AbortController | undefined;
  const start = async (): Promise<void> => {
    while (!stopped) {
      const closed = Promise.withResolvers<unknown>();
      const query: Record<string, string | boolean> = { allowWatchBookmarks: true };
      if (lastRv) query.resourceVersion = lastRv;
      controller = await new Watch(kubeConfig).watch(
        path,
        query,
        (type, object: T) => {
          const rv = object?.metadata?.resourceVersion;
          if (type === 'BOOKMARK') {
            if (rv) lastRv = rv;
            return;
          }
          if (type === 'ERROR') {
            errors.push(new Error(`watch ${path}: ${JSON.stringify(object)}`));
            stopped = true;
            return;
          }
          if (!rv || (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED')) return;
          lastRv = rv;
          const event: Observed<T> = { type, object, at: Date.now(), rv: BigInt(rv) };
          sink.push(event);
          onEvent(event);
        },
        (err) => closed.resolve(err),
      );
      await closed.promise;
      if (!stopped) await sleep(100);
    }
  };
  start().catch((error: unknown) => errors.push(new Error(`watch ${path} failed`, { cause: error })));
  return () => {
    stopped = true;
    controller?.abort();
  };
}

/** The status of container `name` of `pod`, regular or init (the release hook is a native sidecar, an init container). */
export function containerStatus(pod: V1Pod | undefined, name: string): V1ContainerStatus | undefined {
  return [...(pod?.status?.containerStatuses ?? []), ...(pod?.status?.initContainerStatuses ?? [])].find((status) => status.name === name);
}

export function operatorStatus(pod: V1Pod | undefined): V1ContainerStatus | undefined {
  return containerStatus(pod, OPERATOR_CONTAINER);
}

/**
 * Streams the log of `container` of `pod` (follow=true) into `onLine` until
 * the server ends it, or `signal` aborts it. Plain node:https rather than
 * client-node's Log, whose stream has no error handler: a connection reset
 * would be an uncaught exception here.
 */
async function streamLog(namespace: string, pod: string, container: string, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(`${cluster.server}/api/v1/namespaces/${namespace}/pods/${pod}/log`);
  url.searchParams.set('container', container);
  url.searchParams.set('follow', 'true');
  const options: https.RequestOptions = { signal };
  await kubeConfig.applyToHTTPSOptions(options);
  await new Promise<void>((resolve, reject) => {
    const request = https.get(url, options, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`GET ${url.pathname}: HTTP ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      const lines = createInterface({ input: response });
      lines.on('line', onLine);
      // readline re-emits its input's errors (a reset connection, the abort): handled here.
      lines.on('error', reject);
      response.on('error', reject);
      lines.on('close', resolve);
    });
    request.on('error', reject);
  });
}

/**
 * Follows the log of `container` of `pod` until the container has terminated
 * (or the pod is gone). A follow stream the server closes early is reopened;
 * lines already seen are skipped (every line carries a timestamp of ns
 * (operators) or ms (hook) resolution and a distinct message or sequence, so
 * equal lines are repeats).
 */
async function followLogs(namespace: string, pod: string, container: string, recording: Recording, signal: AbortSignal): Promise<void> {
  const seen = new Set<string>();
  const onLine = (line: string): void => {
    if (seen.has(line)) return;
    seen.add(line);
    try {
      const fields = JSON.parse(line) as Record<string, unknown>;
      const time = fields.ts ?? fields.time;
      if (typeof time === 'string' && typeof fields.msg === 'string') {
        recording.logs.push({ pod, container, at: parseTime(time), msg: fields.msg, fields });
      }
    } catch {
      // Not a JSON log line (a Go runtime panic, say): not an event.
    }
  };
  while (!signal.aborted) {
    try {
      await streamLog(namespace, pod, container, onLine, signal);
    } catch {
      // Container not started yet, pod already gone, connection reset or stopped: decided below.
    }
    const now = recording.podNow.get(pod);
    if (!now || containerStatus(now, container)?.state?.terminated) return;
    await sleep(250).catch(() => undefined);
  }
}

/**
 * Records everything that happens in `namespace` from now on: pods,
 * ConfigMaps, Leases and Events, and the logs of `containers` (by default the
 * operator's) of every pod once they run.
 */
export async function record(namespace: string, containers: string[] = [OPERATOR_CONTAINER]): Promise<Recording> {
  const recording: Recording = { pods: [], configMaps: [], leases: [], events: [], logs: [], podNow: new Map(), errors: [], stop: async () => {} };
  const stopFollowing = new AbortController();
  const followers: Promise<void>[] = [];
  const following = new Set<string>();
  const stops = [
    watchAll<V1Pod>(
      `/api/v1/namespaces/${namespace}/pods`,
      recording.pods,
      (event) => {
        const name = event.object.metadata?.name ?? '';
        recording.podNow.set(name, event.type === 'DELETED' ? undefined : event.object);
        for (const container of containers) {
          const state = containerStatus(event.object, container)?.state;
          const key = `${name}/${container}`;
          if (!following.has(key) && (state?.running || state?.terminated)) {
            following.add(key);
            followers.push(followLogs(namespace, name, container, recording, stopFollowing.signal));
          }
        }
      },
      recording.errors,
    ),
    watchAll<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps`, recording.configMaps, () => {}, recording.errors),
    watchAll<V1Lease>(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, recording.leases, () => {}, recording.errors),
    watchAll<CoreV1Event>(`/api/v1/namespaces/${namespace}/events`, recording.events, () => {}, recording.errors),
  ];
  recording.stop = async () => {
    stopFollowing.abort();
    for (const stop of stops) stop();
    await Promise.all(followers);
  };
  return recording;
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
  t: TestContext,
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
  const recording = await record(namespace.name, init.containers);
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
  holder: string;
  seq: number;
  /** The leader's own time of the write. */
  at: number;
  rv: bigint;
}

export function heartbeats(recording: Recording, name: string): Heartbeat[] {
  return recording.configMaps
    .filter((event) => event.type !== 'DELETED' && event.object.metadata?.name === name && event.object.data?.holder)
    .map((event) => {
      const data = event.object.data ?? {};
      return { holder: data.holder ?? '', seq: Number(data.seq), at: parseTime(data.time ?? ''), rv: event.rv };
    });
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

/**
 * Exactly one leader at every heartbeat: merged in write order with the
 * writes of the lock, each heartbeat comes from the pod that holds the lock
 * at that revision; per holder the sequence only grows, and leadership moves
 * at most once per failover — an old leader never writes again after a new
 * one has started.
 */
export function assertOneLeaderAtEveryHeartbeat<L>(
  beats: Heartbeat[],
  lockEvents: Observed<L>[],
  holderOf: (lock: L | undefined) => string | undefined,
  expectedHolders: string[],
): void {
  assert.ok(beats.length > 0, 'heartbeats were observed');
  const merged = [...lockEvents.map((event) => ({ kind: 'lock' as const, event })), ...beats.map((beat) => ({ kind: 'beat' as const, beat }))].sort((a, b) => {
    const ra = a.kind === 'lock' ? a.event.rv : a.beat.rv;
    const rb = b.kind === 'lock' ? b.event.rv : b.beat.rv;
    return ra < rb ? -1 : ra > rb ? 1 : 0;
  });
  let holder: string | undefined;
  const lastSeq = new Map<string, number>();
  const order: string[] = [];
  for (const item of merged) {
    if (item.kind === 'lock') {
      holder = item.event.type === 'DELETED' ? undefined : holderOf(item.event.object);
      continue;
    }
    const { beat } = item;
    assert.equal(beat.holder, holder, `heartbeat seq ${beat.seq} (rv ${beat.rv}) written by ${beat.holder} while the lock was held by ${holder ?? 'nobody'}`);
    const previous = lastSeq.get(beat.holder) ?? 0;
    assert.ok(beat.seq > previous, `heartbeat seq of ${beat.holder} went from ${previous} to ${beat.seq}`);
    lastSeq.set(beat.holder, beat.seq);
    if (order.at(-1) !== beat.holder) order.push(beat.holder);
  }
  assert.deepEqual(order, expectedHolders, 'the sequence of heartbeat writers');
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
  return `recorded: ${recording.pods.length} pod, ${recording.configMaps.length} ConfigMap, ${recording.leases.length} Lease, ${recording.events.length} Event events; pods: ${pods.join('; ') || 'none'}${errors.length ? `; errors: ${errors.join('; ')}` : ''}`;
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
export interface LeaderLock<L> {
  kind: 'ConfigMap' | 'Lease';
  name: string;
  heartbeat: string;
  /** Every recorded event of this lock, in arrival order. */
  events: (recording: Recording) => Observed<L>[];
  /** The pod that holds the lock; undefined when nobody does (a leaderless Lease). */
  holderOf: (lock: L | undefined) => string | undefined;
}

/** operator-lib's leader-for-life lock: its one ownerReference names the leader pod. */
export const lflLock: LeaderLock<V1ConfigMap> = {
  kind: 'ConfigMap',
  name: 'lfl-operator-lock',
  heartbeat: 'lfl-operator-lock-heartbeat',
  events: (recording) => recording.configMaps.filter((event) => event.object.metadata?.name === 'lfl-operator-lock'),
  holderOf: (cm) => cm?.metadata?.ownerReferences?.[0]?.name,
};

/** controller-runtime's Lease: its holderIdentity is `hostname_uuid`, and a pod's hostname is its name. */
export const leaseLock: LeaderLock<V1Lease> = {
  kind: 'Lease',
  name: 'lease-operator-lock',
  heartbeat: 'lease-operator-lock-heartbeat',
  events: (recording) => recording.leases.filter((event) => event.object.metadata?.name === 'lease-operator-lock'),
  holderOf: (lease) => lease?.spec?.holderIdentity?.replace(/_[^_]*$/, '') || undefined,
};

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
export function waitForTakeover<L>(recording: Recording, lock: LeaderLock<L>, leader: string, since: number): Promise<Observed<L>> {
  return waitForRecorded(
    recording,
    `another pod to hold ${lock.kind}/${lock.name}`,
    async () =>
      lock.events(recording).find((event) => {
        const holder = event.type === 'DELETED' ? undefined : lock.holderOf(event.object);
        return event.at > since && holder !== undefined && holder !== leader;
      }),
    failoverTimeoutMs,
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

/** Observes a second more (heartbeats of the new leader), stops the recording and asserts it lost nothing. */
export async function finishRecording(recording: Recording): Promise<void> {
  await sleep(1000);
  await recording.stop();
  assert.deepEqual(recording.errors, []);
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

/** Exactly one leader at every heartbeat of the whole recording, `holders` in turn. */
export function assertOneLeaderThroughout<L>(recording: Recording, lock: LeaderLock<L>, holders: string[]): void {
  assertOneLeaderAtEveryHeartbeat(heartbeats(recording, lock.heartbeat), lock.events(recording), lock.holderOf, holders);
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
