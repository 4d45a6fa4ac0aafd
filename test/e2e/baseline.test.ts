/**
 * Baseline: how the real operators under test fail over WITHOUT leaderhook.
 *
 * Two replicas of each operator elect exactly one leader; deleting the leader
 * pod hands leadership to another pod — for the leader-for-life operator
 * through the garbage collector (pod object gone, then the lock ConfigMap,
 * then a standby's next Create), for the Lease operator once the 15 s lease
 * has run out. Everything is observed, nothing is simulated: watches on pods,
 * ConfigMaps and Leases, the operators' own JSON logs, and the heartbeat the
 * leader writes every 100 ms. The tests assert the order of events and that
 * every heartbeat came from the pod holding the lock at that moment; the
 * durations are printed (and written to LEADERHOOK_BASELINE_OUT as JSON
 * lines when set), never asserted: docs/baseline.md records them.
 *
 * Needs the operator images (test/operators/build.sh). Run inside the cluster's
 * network namespace:
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/baseline.test.ts
 */
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  loadAllYaml,
  type V1ConfigMap,
  type V1Deployment,
  type V1Lease,
  type V1Pod,
  type V1Role,
  type V1RoleBinding,
  type V1ServiceAccount,
  Watch,
} from '@kubernetes/client-node';
import { apps, core, createTestNamespace, kubeConfig, rbac, waitFor } from '../support/kube.ts';

const operatorsDir = join(import.meta.dirname, '..', 'operators');
const container = 'operator';
/** Time for a freshly created Deployment to elect its first leader (image is local, pods start fast). */
const electionTimeoutMs = 120_000;
/** Leader-for-life: pod termination + GC + the standby's backoff (capped at 16 s + 20 % jitter). Lease: 15 s lease + 2 s retry. */
const failoverTimeoutMs = 120_000;

// ---------------------------------------------------------------------------
// Observation: watches that survive reconnects, and the operators' log streams

interface Observed<T> {
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

interface LogLine {
  pod: string;
  /** The line's own "ts" (the operator's clock; the node is this machine). */
  at: number;
  msg: string;
  fields: Record<string, unknown>;
}

interface Recording {
  pods: Observed<V1Pod>[];
  configMaps: Observed<V1ConfigMap>[];
  leases: Observed<V1Lease>[];
  logs: LogLine[];
  /** The last state seen of each pod; undefined once it is gone. */
  podNow: Map<string, V1Pod | undefined>;
  errors: Error[];
  stop: () => Promise<void>;
}

/** Parses an RFC 3339 time with up to nanosecond digits into fractional ms since the epoch. */
function parseTime(value: string): number {
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

function operatorStatus(pod: V1Pod | undefined) {
  return pod?.status?.containerStatuses?.find((status) => status.name === container);
}

/**
 * Streams the log of the operator container of `pod` (follow=true) into
 * `onLine` until the server ends it, or `signal` aborts it. Plain node:https
 * rather than client-node's Log, whose stream has no error handler: a
 * connection reset would be an uncaught exception here.
 */
async function streamLog(namespace: string, pod: string, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
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
 * Follows the log of the operator container of `pod` until the container has
 * terminated (or the pod is gone). A follow stream the server closes early is
 * reopened; lines already seen are skipped (every line carries a nanosecond
 * timestamp, so equal lines are repeats).
 */
async function followLogs(namespace: string, pod: string, recording: Recording, signal: AbortSignal): Promise<void> {
  const seen = new Set<string>();
  const onLine = (line: string): void => {
    if (seen.has(line)) return;
    seen.add(line);
    try {
      const fields = JSON.parse(line) as Record<string, unknown>;
      if (typeof fields.ts === 'string' && typeof fields.msg === 'string') {
        recording.logs.push({ pod, at: parseTime(fields.ts), msg: fields.msg, fields });
      }
    } catch {
      // Not one of the operator's JSON lines (a Go runtime panic, say): not an event.
    }
  };
  while (!signal.aborted) {
    try {
      await streamLog(namespace, pod, onLine, signal);
    } catch {
      // Container not started yet, pod already gone, connection reset or stopped: decided below.
    }
    const now = recording.podNow.get(pod);
    if (!now || operatorStatus(now)?.state?.terminated) return;
    await sleep(250).catch(() => undefined);
  }
}

async function record(namespace: string): Promise<Recording> {
  const recording: Recording = { pods: [], configMaps: [], leases: [], logs: [], podNow: new Map(), errors: [], stop: async () => {} };
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
        const state = operatorStatus(event.object)?.state;
        if (!following.has(name) && (state?.running || state?.terminated)) {
          following.add(name);
          followers.push(followLogs(namespace, name, recording, stopFollowing.signal));
        }
      },
      recording.errors,
    ),
    watchAll<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps`, recording.configMaps, () => {}, recording.errors),
    watchAll<V1Lease>(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, recording.leases, () => {}, recording.errors),
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
type Shape = 'deployment' | 'bare-pods';

async function deployOperator(namespace: string, operator: string, shape: Shape): Promise<void> {
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
  const [deployment] = loadAllYaml(readFileSync(join(operatorsDir, 'manifests', `${operator}.yaml`), 'utf8')) as V1Deployment[];
  assert.ok(deployment?.spec?.template, `test/operators/manifests/${operator}.yaml holds a Deployment`);
  if (shape === 'deployment') {
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    return;
  }
  for (const suffix of ['a', 'b']) {
    const { metadata, spec } = deployment.spec.template;
    await core.createNamespacedPod({ namespace, body: { metadata: { ...metadata, name: `${operator}-${suffix}` }, spec } });
  }
}

// ---------------------------------------------------------------------------
// What the recording says

interface Heartbeat {
  holder: string;
  seq: number;
  /** The leader's own time of the write. */
  at: number;
  rv: bigint;
}

function heartbeats(recording: Recording, name: string): Heartbeat[] {
  return recording.configMaps
    .filter((event) => event.type !== 'DELETED' && event.object.metadata?.name === name && event.object.data?.holder)
    .map((event) => {
      const data = event.object.data ?? {};
      return { holder: data.holder ?? '', seq: Number(data.seq), at: parseTime(data.time ?? ''), rv: event.rv };
    });
}

function loggedBy(recording: Recording, msg: string): LogLine[] {
  return recording.logs.filter((line) => line.msg === msg);
}

function logOf(recording: Recording, pod: string, msg: string): LogLine | undefined {
  return recording.logs.find((line) => line.pod === pod && line.msg === msg);
}

/**
 * Exactly one leader at every heartbeat: merged in write order with the
 * writes of the lock, each heartbeat comes from the pod that holds the lock
 * at that revision; per holder the sequence only grows, and leadership moves
 * at most once per failover — an old leader never writes again after a new
 * one has started.
 */
function assertOneLeaderAtEveryHeartbeat<L>(
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

interface Mark {
  label: string;
  at: number;
}

function printTimeline(t: TestContext, operator: string, marks: Mark[], zero: number): void {
  const lines = [...marks].sort((a, b) => a.at - b.at).map((mark) => `${((mark.at - zero) / 1000).toFixed(3).padStart(8)} s  ${mark.label}`);
  t.diagnostic(`${operator} failover timeline (seconds after the delete was issued):`);
  for (const line of lines) t.diagnostic(line);
  const out = process.env.LEADERHOOK_BASELINE_OUT;
  if (out) {
    const entry = {
      operator,
      recordedAt: new Date(zero).toISOString(),
      marks: marks.map((mark) => ({ label: mark.label, seconds: Number(((mark.at - zero) / 1000).toFixed(3)) })),
    };
    appendFileSync(out, `${JSON.stringify(entry)}\n`);
  }
}

function mark(label: string, at: number | undefined): Mark[] {
  return at === undefined ? [] : [{ label, at }];
}

/** What was recorded so far, in a few lines: for failure messages. */
function summary(recording: Recording): string {
  const pods = [...recording.podNow].map(
    ([name, pod]) => `${name}: ${pod ? (pod.status?.phase ?? 'no phase') : 'gone'}, ${recording.logs.filter((line) => line.pod === name).length} log lines`,
  );
  const errors = recording.errors.map((error) => error.message);
  return `recorded: ${recording.pods.length} pod, ${recording.configMaps.length} ConfigMap, ${recording.leases.length} Lease events; pods: ${pods.join('; ') || 'none'}${errors.length ? `; errors: ${errors.join('; ')}` : ''}`;
}

/** waitFor, with what the recording holds named when it times out. */
async function waitForRecorded<T>(
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
async function waitForSteadyLeader(recording: Recording, heartbeatName: string): Promise<{ leader: string; standby: string }> {
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

function assertBefore(first: { label: string; at: number | bigint | undefined }, second: { label: string; at: number | bigint | undefined }): void {
  assert.ok(first.at !== undefined, `${first.label} was observed`);
  assert.ok(second.at !== undefined, `${second.label} was observed`);
  assert.ok(first.at <= second.at, `${first.label} (${first.at}) comes before ${second.label} (${second.at})`);
}

// ---------------------------------------------------------------------------

/**
 * A namespace of its own (restricted Pod Security: the manifests must pass it
 * as they are), recorded from before the operator's first object exists.
 */
async function setUp(t: TestContext, operator: string, shape: Shape): Promise<{ namespace: string; recording: Recording }> {
  const namespace = await createTestNamespace(operator.replace(/-operator$/, '-baseline'), { 'pod-security.kubernetes.io/enforce': 'restricted' });
  const recording = await record(namespace.name);
  t.after(async () => {
    await recording.stop();
    await namespace.cleanup();
  });
  await deployOperator(namespace.name, operator, shape);
  return { namespace: namespace.name, recording };
}

/**
 * operator-lib's standby retries Create after 1, 2, 4, 8 s, then every 16 s
 * (+ up to 20 % jitter): after 1 + 2 + 4 + 8 + 16 s of waiting it sleeps in
 * 16 s steps, the state every standby of a long-lived leader is in. How
 * long a failover then takes depends on where in that cycle the leader goes:
 * anywhere, so the delete comes at a random point of it.
 */
const backedOffMs = 32_000;

/**
 * The leader-for-life scenario: one leader, its pod deleted, a new leader
 * through the GC path. With `shape: 'bare-pods'` the standby waits until its
 * backoff has reached the cap before the delete, and must be the new leader.
 */
async function lflFailover(t: TestContext, shape: Shape): Promise<void> {
  const lock = 'lfl-operator-lock';
  const heartbeatName = `${lock}-heartbeat`;
  const { namespace, recording } = await setUp(t, 'lfl-operator', shape);

  const { leader, standby } = await waitForSteadyLeader(recording, heartbeatName);
  if (shape === 'bare-pods') {
    const tried = logOf(recording, standby, 'trying');
    assert.ok(tried, `standby ${standby} logged "trying"`);
    // The delete lands anywhere in the standby's 16 s retry cycle, as it would in the field.
    const waitMs = tried.at + backedOffMs + Math.random() * 16_000 - Date.now();
    if (waitMs > 0) await sleep(waitMs);
  }
  const leaderPod = recording.podNow.get(leader);
  assert.ok(leaderPod?.metadata?.uid, `leader pod ${leader} was observed`);
  const lockObject = await core.readNamespacedConfigMap({ name: lock, namespace });
  assert.deepEqual(
    lockObject.metadata?.ownerReferences?.map(({ apiVersion, kind, name, uid, controller }) => ({
      apiVersion,
      kind,
      name,
      uid,
      controller: controller ?? false,
    })),
    [{ apiVersion: 'v1', kind: 'Pod', name: leader, uid: leaderPod.metadata.uid, controller: false }],
    'the lock has exactly one ownerReference, the leader pod, without the controller flag',
  );

  const deleteIssued = Date.now();
  await core.deleteNamespacedPod({ name: leader, namespace });

  const newLock = await waitForRecorded(
    recording,
    'a new lock ConfigMap owned by another pod',
    async () =>
      recording.configMaps.find(
        (event) => event.type === 'ADDED' && event.object.metadata?.name === lock && event.object.metadata.ownerReferences?.[0]?.name !== leader,
      ),
    failoverTimeoutMs,
  );
  const newLeader = newLock.object.metadata?.ownerReferences?.[0]?.name ?? '';
  await waitForRecorded(
    recording,
    'the new leader to log "became leader" and write a heartbeat',
    async () => logOf(recording, newLeader, 'became leader') && heartbeats(recording, heartbeatName).some((beat) => beat.holder === newLeader),
    failoverTimeoutMs,
  );
  await waitForRecorded(
    recording,
    'the old leader pod to be gone',
    async () => recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader),
    failoverTimeoutMs,
  );
  await sleep(1000); // more heartbeats of the new leader, under observation
  await recording.stop();
  assert.deepEqual(recording.errors, []);

  const exited = recording.pods.find((event) => event.object.metadata?.name === leader && operatorStatus(event.object)?.state?.terminated);
  const podGone = recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader);
  const lockGone = recording.configMaps.find((event) => event.type === 'DELETED' && event.object.metadata?.name === lock);
  const stopping = logOf(recording, leader, 'stopping');
  const stopped = logOf(recording, leader, 'stopped');
  const beats = heartbeats(recording, heartbeatName);
  const lastOld = beats.filter((beat) => beat.holder === leader).at(-1);
  const firstNew = beats.find((beat) => beat.holder === newLeader);
  const became = logOf(recording, newLeader, 'became leader');
  const newLeaderPod = recording.podNow.get(newLeader);

  printTimeline(
    t,
    shape === 'deployment' ? 'lfl-operator' : 'lfl-operator (bare pods, standby backed off)',
    [
      ...mark('delete issued', deleteIssued),
      ...mark('old leader logged "stopping" (SIGTERM)', stopping?.at),
      ...mark('old leader wrote its last heartbeat', lastOld?.at),
      ...mark('old leader logged "stopped"', stopped?.at),
      ...mark('old container seen exited (watch)', exited?.at),
      ...mark('old pod object gone (watch)', podGone?.at),
      ...mark('lock ConfigMap gone (watch)', lockGone?.at),
      ...mark(`new lock created by ${newLeader} (watch)`, newLock.at),
      ...mark('new leader logged "became leader"', became?.at),
      ...mark('new leader wrote its first heartbeat', firstNew?.at),
      ...recording.logs
        // operator-lib's own lines up to the win, from 20 s before the delete: its backoff, retry by retry.
        .filter(
          (line) =>
            line.pod === newLeader &&
            line.at > deleteIssued - 20_000 &&
            line.at < (became?.at ?? Number.POSITIVE_INFINITY) &&
            String(line.fields.logger).endsWith('/leader') &&
            line.fields.error === undefined,
        )
        .map((line) => ({ label: `  new leader, operator-lib: ${JSON.stringify(line.msg)}`, at: line.at })),
    ],
    deleteIssued,
  );
  t.diagnostic(
    `new leader ${newLeader} is ${loggedBy(recording, 'trying').some((line) => line.pod === newLeader && line.at < deleteIssued) ? 'the standby that was waiting' : 'the replacement pod the Deployment created'}`,
  );

  // The GC path, in order: the container stops, the pod object goes, then
  // (only then) the lock, then a standby creates the next one.
  assertBefore({ label: 'delete issued', at: deleteIssued }, { label: '"stopping"', at: stopping?.at });
  assertBefore({ label: '"stopping"', at: stopping?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'last heartbeat of the old leader', at: lastOld?.at }, { label: '"stopped"', at: stopped?.at });
  assertBefore({ label: 'container exited', at: exited?.rv }, { label: 'pod object gone', at: podGone?.rv });
  assertBefore({ label: 'pod object gone', at: podGone?.rv }, { label: 'lock ConfigMap gone', at: lockGone?.rv });
  assertBefore({ label: 'lock ConfigMap gone', at: lockGone?.rv }, { label: 'new lock created', at: newLock.rv });
  assertBefore({ label: '"stopped" of the old leader', at: stopped?.at }, { label: '"became leader" of the new leader', at: became?.at });
  assert.notEqual(newLeader, leader);
  assert.equal(newLock.object.metadata?.ownerReferences?.length, 1);
  assert.equal(newLock.object.metadata?.ownerReferences?.[0]?.uid, newLeaderPod?.metadata?.uid, 'the new lock is owned by the new leader pod (UID)');
  assert.deepEqual(
    [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
    [leader, newLeader],
    'two pods ever logged "became leader": the old leader, then the new one',
  );
  assertOneLeaderAtEveryHeartbeat(
    beats,
    recording.configMaps.filter((event) => event.object.metadata?.name === lock),
    (cm) => cm?.metadata?.ownerReferences?.[0]?.name,
    [leader, newLeader],
  );
  if (shape === 'bare-pods') assert.equal(newLeader, standby, 'with no replacement pod, the standby that was waiting leads');
}

describe('baseline failover without leaderhook', () => {
  test('lfl-operator (operator-lib leader-for-life), Deployment: one leader, then another pod leads through the GC path', async (t) => {
    await lflFailover(t, 'deployment');
  });

  test('lfl-operator (operator-lib leader-for-life), two bare pods: the standby, backed off to 16 s, leads through the GC path', async (t) => {
    await lflFailover(t, 'bare-pods');
  });

  test('lease-operator (controller-runtime Lease): one leader, then another pod leads once the lease has expired', async (t) => {
    const lock = 'lease-operator-lock';
    const heartbeatName = `${lock}-heartbeat`;
    const { namespace, recording } = await setUp(t, 'lease-operator', 'deployment');

    const { leader } = await waitForSteadyLeader(recording, heartbeatName);
    const lease = await waitForRecorded(
      recording,
      'the lease',
      async () => recording.leases.filter((event) => event.object.metadata?.name === lock).at(-1)?.object,
      10_000,
    );
    const holderOf = (l: V1Lease | undefined): string | undefined => l?.spec?.holderIdentity?.replace(/_[^_]*$/, '');
    assert.equal(holderOf(lease), leader, `lease holderIdentity ${lease.spec?.holderIdentity} is the leader's hostname_uuid`);

    const deleteIssued = Date.now();
    await core.deleteNamespacedPod({ name: leader, namespace });

    const acquired = await waitForRecorded(
      recording,
      'another pod to hold the lease',
      async () =>
        recording.leases.find(
          (event) => event.object.metadata?.name === lock && event.at > deleteIssued && holderOf(event.object) && holderOf(event.object) !== leader,
        ),
      failoverTimeoutMs,
    );
    const newLeader = holderOf(acquired.object) ?? '';
    await waitForRecorded(
      recording,
      'the new leader to log "became leader" and write a heartbeat',
      async () => logOf(recording, newLeader, 'became leader') && heartbeats(recording, heartbeatName).some((beat) => beat.holder === newLeader),
      failoverTimeoutMs,
    );
    await waitForRecorded(
      recording,
      'the old leader pod to be gone',
      async () => recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader),
      failoverTimeoutMs,
    );
    await sleep(1000);
    await recording.stop();
    assert.deepEqual(recording.errors, []);

    const exited = recording.pods.find((event) => event.object.metadata?.name === leader && operatorStatus(event.object)?.state?.terminated);
    const podGone = recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === leader);
    const stopping = logOf(recording, leader, 'stopping');
    const stopped = logOf(recording, leader, 'stopped');
    const beats = heartbeats(recording, heartbeatName);
    const lastOld = beats.filter((beat) => beat.holder === leader).at(-1);
    const firstNew = beats.find((beat) => beat.holder === newLeader);
    const became = logOf(recording, newLeader, 'became leader');
    const lastRenewal = recording.leases.filter((event) => event.object.metadata?.name === lock && holderOf(event.object) === leader).at(-1)?.object.spec;
    const lastRenewedAt = lastRenewal?.renewTime ? new Date(lastRenewal.renewTime).getTime() : undefined;
    const acquireTime = acquired.object.spec?.acquireTime ? new Date(acquired.object.spec.acquireTime).getTime() : undefined;

    printTimeline(
      t,
      'lease-operator',
      [
        ...mark('delete issued', deleteIssued),
        ...mark('old leader logged "stopping" (SIGTERM)', stopping?.at),
        ...mark('old leader wrote its last heartbeat', lastOld?.at),
        ...mark('old leader logged "stopped"', stopped?.at),
        ...mark('old container seen exited (watch)', exited?.at),
        ...mark('old pod object gone (watch)', podGone?.at),
        ...mark('lease last renewed by the old leader (renewTime)', lastRenewedAt),
        ...mark(
          `lease expired (renewTime + ${lastRenewal?.leaseDurationSeconds} s)`,
          lastRenewedAt === undefined ? undefined : lastRenewedAt + (lastRenewal?.leaseDurationSeconds ?? 0) * 1000,
        ),
        ...mark(`lease acquired by ${newLeader} (acquireTime)`, acquireTime),
        ...mark('lease holder change seen (watch)', acquired.at),
        ...mark('new leader logged "became leader"', became?.at),
        ...mark('new leader wrote its first heartbeat', firstNew?.at),
      ],
      deleteIssued,
    );
    t.diagnostic(
      `new leader ${newLeader} is ${loggedBy(recording, 'trying').some((line) => line.pod === newLeader && line.at < deleteIssued) ? 'the standby that was waiting' : 'the replacement pod the Deployment created'}`,
    );

    assertBefore({ label: 'delete issued', at: deleteIssued }, { label: '"stopping"', at: stopping?.at });
    assertBefore({ label: '"stopping"', at: stopping?.at }, { label: '"stopped"', at: stopped?.at });
    assertBefore({ label: 'last heartbeat of the old leader', at: lastOld?.at }, { label: '"stopped"', at: stopped?.at });
    assertBefore({ label: 'container exited', at: exited?.rv }, { label: 'pod object gone', at: podGone?.rv });
    assertBefore({ label: '"stopped" of the old leader', at: stopped?.at }, { label: '"became leader" of the new leader', at: became?.at });
    // Without ReleaseOnCancel the old leader never hands the lease back: the
    // new holder takes it over from the old one, it never sees it empty.
    assert.ok(
      recording.leases.filter((event) => event.object.metadata?.name === lock).every((event) => holderOf(event.object)),
      'the lease always names a holder (no release on cancel)',
    );
    assert.notEqual(newLeader, leader);
    assert.deepEqual(
      [...new Set(loggedBy(recording, 'became leader').map((line) => line.pod))],
      [leader, newLeader],
      'two pods ever logged "became leader": the old leader, then the new one',
    );
    assertOneLeaderAtEveryHeartbeat(
      beats,
      recording.leases.filter((event) => event.object.metadata?.name === lock),
      holderOf,
      [leader, newLeader],
    );
  });
});
