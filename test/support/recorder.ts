/**
 * Recording what happens in a test namespace, for the failover tests
 * (read by test/support/recording.ts): watches on pods, ConfigMaps, Leases and Events
 * (and, asked to, kopf's KopfPeering objects) that never give up, and the JSON
 * logs of chosen containers, followed run by run (per container instance).
 *
 * Each watch starts from a list. A watch that fails is resumed at the last
 * resourceVersion seen, so the API server replays what was missed; one that
 * gets 410 Gone (the revision was compacted away) lists the collection
 * again, delivers what changed as `relisted` events and watches on from the
 * list. A relisted object may have been written in between unseen: the
 * split-brain checker flags such a stretch of a lock's or heartbeat's
 * history instead of trusting it.
 *
 * A log stream serves one run of one container, and the API names the pod
 * only by name: a StatefulSet reuses names, a restarted container is another
 * run. So each run (test/support/container-runs.ts: pod UID, container,
 * restartCount, checked by the runtime's container ID) gets its own
 * follower, which reads the current run's log while the pod watch shows that
 * run as current, and the previous run's log (`previous=true`) once it has
 * been replaced.
 */
import type { IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CoreV1Event, type V1ConfigMap, type V1Lease, type V1Pod, type V1Status, Watch } from '@kubernetes/client-node';
import { type ContainerRun, describeRun, runKey, runsOf, whereIsRun } from './container-runs.ts';
import type { KopfPeeringObject } from './kopf-peering.ts';
import { kubeConfig } from './kube.ts';
import { readBody, sendApiRequest } from './raw-api.ts';
import { relistChanges } from './relist.ts';
import type { LockUnderTest, ObservedWrite } from './split-brain.ts';

export interface Observed<T> extends ObservedWrite<T> {
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
  /** The pod the line came from, by UID: a pod name can be reused. */
  podUID: string;
  container: string;
  /** The container's run the line came from (the kubelet's restartCount of that run). */
  restartCount: number;
  /** The line's own time ("ts" of the operators, "time" of the hook; the node is this machine). */
  at: number;
  msg: string;
  fields: Record<string, unknown>;
}

export interface Recording {
  namespace: string;
  /** The leader locks under test and their heartbeats, which the split-brain check reads. */
  locks: LockUnderTest[];
  pods: Observed<V1Pod>[];
  configMaps: Observed<V1ConfigMap>[];
  leases: Observed<V1Lease>[];
  events: Observed<CoreV1Event>[];
  /** Empty unless the recording was asked to watch them (startRecording's `kopfPeerings`): a cluster without kopf's CRDs has none to watch. */
  kopfPeerings: Observed<KopfPeeringObject>[];
  logs: LogLine[];
  /** The last state seen of each pod; undefined once it is gone. */
  podNow: Map<string, V1Pod | undefined>;
  /** Watches resumed or relisted, logs that could not be read: what to look at first when a test fails. */
  interruptions: string[];
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

// ---------------------------------------------------------------------------
// The API, read with the kubeconfig's credentials

/**
 * GET `path` with `query` through test/support/raw-api.ts rather than
 * client-node's Log, whose stream has no error handler (a connection reset
 * would be an uncaught exception), or its typed lists, which turn times into
 * Date objects where watch events carry strings.
 */
function get(path: string, query: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
  return sendApiRequest('GET', path, { query, signal });
}

async function getJson<T>(path: string, query: Record<string, string>, signal: AbortSignal): Promise<T> {
  return JSON.parse(await readBody(await get(path, query, signal))) as T;
}

/** Streams the lines of a pod's log (`query`: container, follow, previous) into `onLine` until the server ends it or `signal` aborts it. */
async function streamLog(namespace: string, pod: string, query: Record<string, string>, onLine: (line: string) => void, signal: AbortSignal): Promise<void> {
  const response = await get(`/api/v1/namespaces/${namespace}/pods/${pod}/log`, query, signal);
  response.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: response });
    lines.on('line', onLine);
    // readline re-emits its input's errors (a reset connection, the abort): handled here.
    lines.on('error', reject);
    response.on('error', reject);
    lines.on('close', resolve);
  });
}

// ---------------------------------------------------------------------------
// Watches that never give up

type KubeObject = { metadata?: { name?: string; resourceVersion?: string } };

/** How one watch connection ended: 410 Gone (relist), another failure, or closed (by the server's timeout, or by us). */
type WatchEnd = { gone: boolean; failure?: string };

/**
 * Watches the collection at `path` for as long as the recording runs: lists
 * it first (an empty namespace, usually: nothing to report), then watches
 * from the list's resourceVersion; a closed or failed watch resumes at the
 * last resourceVersion seen (bookmarks included), with a backoff while it
 * keeps failing; 410 Gone lists again and reports what changed as
 * `relisted` events (deletions at the list's revision).
 */
function watchAll<T extends KubeObject>(path: string, sink: Observed<T>[], onEvent: (event: Observed<T>) => void, recording: Recording): () => void {
  const abort = new AbortController();
  let controller: AbortController | undefined;
  let lastRv: string | undefined;
  /** The last version seen of every object, by name: what a relist is compared with. */
  const known = new Map<string, T>();

  const deliver = (type: Observed<T>['type'], object: T, rv: bigint, relisted: boolean): void => {
    const name = object.metadata?.name ?? '';
    if (type === 'DELETED') known.delete(name);
    else known.set(name, object);
    const event: Observed<T> = { type, object, at: Date.now(), rv, ...(relisted ? { relisted: true } : {}) };
    sink.push(event);
    onEvent(event);
  };

  const list = async (): Promise<void> => {
    const items: T[] = [];
    let cont: string | undefined;
    let listRv: string | undefined;
    do {
      const page = await getJson<{ metadata?: { resourceVersion?: string; continue?: string }; items?: T[] }>(
        path,
        { limit: '500', ...(cont ? { continue: cont } : {}) },
        abort.signal,
      );
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
      listRv = page.metadata?.resourceVersion;
    } while (cont);
    if (!listRv) throw new Error(`list ${path}: no resourceVersion`);
    for (const change of relistChanges(known, items, BigInt(listRv))) deliver(change.type, change.object, change.rv, true);
    lastRv = listRv;
  };

  const watchOnce = async (): Promise<WatchEnd> => {
    const ended = Promise.withResolvers<WatchEnd>();
    let over = false;
    const end = (how: WatchEnd): void => {
      over = true;
      ended.resolve(how);
    };
    const query: Record<string, string | boolean> = { allowWatchBookmarks: true };
    if (lastRv) query.resourceVersion = lastRv;
    controller = await new Watch(kubeConfig).watch(
      path,
      query,
      (type, object: T) => {
        if (over) return;
        const rv = object?.metadata?.resourceVersion;
        if (type === 'ERROR') {
          const status = object as V1Status;
          end({ gone: status.code === 410, failure: `${status.code} ${status.reason}: ${status.message}` });
          return;
        }
        if (!rv) return;
        lastRv = rv;
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') deliver(type, object, BigInt(rv), false);
      },
      (error: (Error & { statusCode?: number }) | null) => {
        // client-node aborts a watch that has been silent for 30 s: a quiet collection, not a failure.
        const quiet = error?.name === 'TimeoutError' || error?.name === 'AbortError';
        end({
          gone: error?.statusCode === 410,
          failure: error && !quiet ? `${error.statusCode ? `HTTP ${error.statusCode} ` : ''}${error.message}` : undefined,
        });
      },
    );
    // Stopped while the watch was connecting: its controller did not exist yet.
    if (abort.signal.aborted) controller.abort();
    const how = await ended.promise;
    controller.abort();
    return how;
  };

  const run = async (): Promise<void> => {
    let needList = true;
    let failures = 0;
    while (!abort.signal.aborted) {
      try {
        if (needList) {
          await list();
          needList = false;
        }
        const how = await watchOnce();
        if (abort.signal.aborted) return;
        if (how.gone) {
          recording.interruptions.push(`watch ${path} at rv ${lastRv}: ${how.failure ?? '410 Gone'}; listed again`);
          needList = true;
          continue;
        }
        if (how.failure) {
          failures++;
          recording.interruptions.push(`watch ${path}: ${how.failure}; resumed at rv ${lastRv}`);
        } else {
          failures = 0;
        }
      } catch (error) {
        if (abort.signal.aborted) return;
        failures++;
        recording.interruptions.push(`${needList ? 'list' : 'watch'} ${path}: ${(error as Error).message}; retrying`);
      }
      await sleep(Math.min(5_000, 100 * 2 ** failures), undefined, { signal: abort.signal }).catch(() => undefined);
    }
  };
  run().catch((error: unknown) => recording.errors.push(new Error(`watch ${path} stopped`, { cause: error })));
  return () => {
    abort.abort();
    controller?.abort();
  };
}

// ---------------------------------------------------------------------------
// Logs, run by run

/**
 * Reads the whole log of one container run into the recording: followed
 * while it is the current run, read once more when it has exited, and read
 * as `previous` when it has been replaced. A follow stream that ends is
 * reopened only while the kubelet still reports the run as current (its
 * status may lag the exit by a moment: up to 2 s are given). Lines already
 * seen are skipped (each carries a timestamp of ns or ms resolution and a
 * distinct message or sequence, so equal lines are repeats), and so are
 * operator lines of another process than the run's first: the next run's,
 * should a stream have reached it, which its own follower reads.
 */
async function followRun(namespace: string, run: ContainerRun, recording: Recording, signal: AbortSignal): Promise<void> {
  const seen = new Set<string>();
  let processID: unknown;
  let foreign = 0;
  const onLine = (line: string): void => {
    if (seen.has(line)) return;
    seen.add(line);
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // Not a JSON log line (a Go runtime panic, say): not an event.
    }
    if (fields.processID !== undefined) {
      processID ??= fields.processID;
      if (fields.processID !== processID) {
        foreign++;
        return;
      }
    }
    const time = fields.ts ?? fields.time;
    if (typeof time === 'string' && typeof fields.msg === 'string') {
      const { pod, podUID, container, restartCount } = run;
      recording.logs.push({ pod, podUID, container, restartCount, at: parseTime(time), msg: fields.msg, fields });
    }
  };
  const read = async (query: Record<string, string>): Promise<void> => {
    try {
      await streamLog(namespace, run.pod, { container: run.container, ...query }, onLine, signal);
    } catch {
      // Not served (yet, or any more), connection reset, or stopped: the status decides below.
    }
  };
  const where = (): ReturnType<typeof whereIsRun> => whereIsRun(recording.podNow.get(run.pod), run);
  while (!signal.aborted) {
    const now = where();
    if (now === 'gone') break;
    if (now === 'previous') {
      await read({ previous: 'true' });
      break;
    }
    await read({ follow: 'true' });
    if (now === 'exited') break;
    for (let waited = 0; waited < 2_000 && where() === 'current' && !signal.aborted; waited += 100) {
      await sleep(100, undefined, { signal }).catch(() => undefined);
    }
  }
  if (foreign > 0) recording.interruptions.push(`log of ${describeRun(run)}: ${foreign} lines of another process than ${processID} left out`);
  if (seen.size === 0 && !signal.aborted) recording.interruptions.push(`log of ${describeRun(run)}: not one line could be read`);
}

// ---------------------------------------------------------------------------

/** A recording with nothing seen yet, which stops nothing: what a recorder starts from, and what a test fills by hand. */
export function emptyRecording(namespace: string, locks: LockUnderTest[]): Recording {
  return {
    namespace,
    locks,
    pods: [],
    configMaps: [],
    leases: [],
    events: [],
    kopfPeerings: [],
    logs: [],
    podNow: new Map(),
    interruptions: [],
    errors: [],
    stop: async () => {},
  };
}

/**
 * Records everything that happens in `namespace` from now on: pods,
 * ConfigMaps, Leases and Events, with `kopfPeerings` kopf's KopfPeering
 * objects too, and the logs of `containers` of every pod, run by run; `locks`
 * name what the split-brain check reads afterwards.
 */
export async function startRecording(
  namespace: string,
  containers: string[],
  locks: LockUnderTest[],
  { kopfPeerings = false }: { kopfPeerings?: boolean } = {},
): Promise<Recording> {
  const recording = emptyRecording(namespace, locks);
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
          for (const run of runsOf(event.object, container)) {
            if (following.has(runKey(run))) continue;
            following.add(runKey(run));
            followers.push(followRun(namespace, run, recording, stopFollowing.signal));
          }
        }
      },
      recording,
    ),
    watchAll<V1ConfigMap>(`/api/v1/namespaces/${namespace}/configmaps`, recording.configMaps, () => {}, recording),
    watchAll<V1Lease>(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, recording.leases, () => {}, recording),
    watchAll<CoreV1Event>(`/api/v1/namespaces/${namespace}/events`, recording.events, () => {}, recording),
    ...(kopfPeerings
      ? [watchAll<KopfPeeringObject>(`/apis/kopf.dev/v1/namespaces/${namespace}/kopfpeerings`, recording.kopfPeerings, () => {}, recording)]
      : []),
  ];
  recording.stop = async () => {
    stopFollowing.abort();
    for (const stop of stops) stop();
    await Promise.all(followers);
  };
  return recording;
}
