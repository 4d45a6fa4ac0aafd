/**
 * Recording a leader failover on the real cluster, for the end-to-end tests
 * with and without leaderhook (test/e2e/baseline.test.ts,
 * test/e2e/failover.test.ts).
 *
 * Everything is observed, nothing is simulated: watches on pods, ConfigMaps,
 * Leases and Events that resume where they left off, the JSON logs of the
 * operators (and of the release hook, when injected) followed live, and the
 * heartbeat the leader writes every 100 ms. From that recording the helpers
 * below find the leader, check that exactly one pod led at every heartbeat,
 * and print the timeline of a failover.
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

/** Creates `operator` from test/operators/manifests in `namespace`, as a Deployment or two bare pods (`<operator>-a`, `-b`). */
export async function createOperator(namespace: string, operator: string, options: OperatorOptions): Promise<void> {
  const [deployment] = loadAllYaml(readFileSync(join(operatorsDir, 'manifests', `${operator}.yaml`), 'utf8')) as V1Deployment[];
  assert.ok(deployment?.spec?.template?.spec, `test/operators/manifests/${operator}.yaml holds a Deployment`);
  const template = deployment.spec.template;
  for (const c of template.spec?.containers ?? []) {
    if (c.name !== OPERATOR_CONTAINER) continue;
    if (options.withoutPodNameEnv) c.env = c.env?.filter((e) => e.name !== 'POD_NAME');
    if (options.extraArgs) c.args = [...(c.args ?? []), ...options.extraArgs];
  }
  if (options.annotations) template.metadata = { ...template.metadata, annotations: { ...template.metadata?.annotations, ...options.annotations } };
  if (options.shape === 'deployment') {
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    return;
  }
  for (const suffix of ['a', 'b']) {
    const { metadata, spec } = template;
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
