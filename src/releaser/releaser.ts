/**
 * The release hook: a native sidecar that frees its pod's leader locks once
 * the operator has provably stopped (R1), and frees ConfigMap locks whose
 * holder can never run again (R0, R2, R3). DESIGN §3-4 is the contract; the
 * rules themselves live in rules.ts as pure functions.
 */
import type { Logger } from '../line-log.ts';
import { backoffDelay, sleep } from '../kube/backoff.ts';
import { type KubeClient, metadataAccept, paths } from '../kube/client.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import type { ConfigMap, Lease, OwnerReference, Pod } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { buildPodEvent, type EventReason, type EventTarget } from './events.ts';
import { noMetrics, type ReleaserMetrics, startMetrics } from './metrics.ts';
import { can, checkPermissions, type Permissions, permissionEffects, requiredPermissions } from './permissions.ts';
import {
  decideHolderRelease,
  decideOwnRelease,
  type HolderDecision,
  type HolderLookup,
  isOwnLease,
  leaseIdentityIsPodName,
  lockCandidateOwner,
  lockNameFromAnnotations,
  lockOwner,
  notFound,
  type OwnDecision,
  observeFromAnnotations,
  releasedLease,
  sameWorkload,
} from './rules.ts';

export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
}

export interface ReleaserOptions {
  podName: string;
  podNamespace: string;
  podUid: string;
  /** Pins the ConfigMap lock's name; pod annotation leaderhook.io/lock wins. Discovered when unset. */
  lockName?: string;
  /** R1: a SIGTERM must come this long before the deletion deadline (default 2). */
  marginSeconds?: number;
  /** Log and record Events for what would be released, release nothing; annotation leaderhook.io/observe wins. */
  observe?: boolean;
  /** The SIGTERM release gives up after this long (default 1500). */
  releaseTimeoutMs?: number;
  /** How often a waiting standby reports the holder (default 60). */
  waitReportIntervalSeconds?: number;
  /** Serve Prometheus metrics on this port; off when unset or 0. */
  metricsPort?: number;
  client: KubeClient;
  logger: Logger;
  clock?: Clock;
}

export interface TerminateResult {
  decision: OwnDecision | { release: false; refusal: 'ownPodUnreadable' | 'timeout'; message: string };
  /** `ConfigMap/name` or `Lease/name` for each lock freed. */
  released: string[];
  /** What observe mode would have freed. */
  observed: string[];
  /** Locks that were already gone or changed hands. */
  moved: string[];
  failed: string[];
  durationMs: number;
}

export interface RunningReleaser {
  /**
   * Settles once the start work is done: permissions checked, own pod read,
   * locks and Leases listed (and R0 evaluated). Nothing waits for it in a
   * pod; tests do.
   */
  readonly ready: Promise<void>;
  /** The SIGTERM path (R1). Never rejects; always settles within releaseTimeoutMs (plus a little). */
  onTerminate(): Promise<TerminateResult>;
  /** Stops watches and timers (tests, and after onTerminate). The client stays open: it belongs to the caller. */
  stop(): Promise<void>;
}

/**
 * A ConfigMap of this pod that may be a lock. `meta` is what the metadata-only
 * watch delivered; `verified` is the last full version read live that is a
 * lock of this pod (no data), whose uid and resourceVersion guard the delete.
 */
interface OwnLock {
  meta: ConfigMap;
  verified?: ConfigMap;
}

/** A ConfigMap lock held by another pod, and what we last learned of its holder. */
interface Tracker {
  name: string;
  /** Metadata only, as the watch delivered it. */
  cm: ConfigMap;
  owner: OwnerReference;
  /** The full object read live at `verifiedRv`, when it is a lock (no data): its preconditions guard the delete. */
  lock?: ConfigMap;
  /** The metadata resourceVersion the last live read was made for. */
  verifiedRv?: string;
  /** The live read found data: the pod's own configuration, never released, never reported. */
  notALock?: boolean;
  /** The holder state last reported in an Event, so a wait is reported when it changes, not every interval. */
  reportedState?: string;
  /** When this pod started waiting for this holder (clock ms). */
  since: number;
  busy: boolean;
  dirty: boolean;
  failures: number;
  retry?: NodeJS.Timeout;
  holder?: HolderLookup;
  decision?: HolderDecision;
  /** Observe mode: the lock version already reported, so events are not repeated. */
  observedKey?: string;
}

export async function runReleaser(options: ReleaserOptions): Promise<RunningReleaser> {
  for (const key of ['podName', 'podNamespace', 'podUid'] as const) {
    if (!options[key]) throw new Error(`release hook: ${key} is empty (POD_NAME, POD_NAMESPACE and POD_UID come from the downward API)`);
  }
  const { client, podName, podUid } = options;
  const ns = options.podNamespace;
  const marginSeconds = options.marginSeconds ?? 2;
  const releaseTimeoutMs = options.releaseTimeoutMs ?? 1500;
  const reportIntervalMs = (options.waitReportIntervalSeconds ?? 60) * 1000;
  const clock = options.clock ?? { now: Date.now };
  const log = options.logger.child({ pod: podName, namespace: ns });

  let metrics: ReleaserMetrics = noMetrics;
  if (options.metricsPort) {
    try {
      metrics = await startMetrics(options.metricsPort, log);
    } catch (err) {
      log.error({ err }, 'metrics disabled');
    }
  }

  const background = new AbortController();
  let terminating: Promise<TerminateResult> | undefined;
  let stopped = false;
  let ownPod: Pod | undefined;
  let lockName = options.lockName || undefined;
  let observe = options.observe ?? false;
  let perms: Permissions | undefined;
  const ownLocks = new Map<string, OwnLock>();
  const ownLeases = new Map<string, Lease>();
  const trackers = new Map<string, Tracker>();
  const holderWatches = new Map<string, Watcher>();
  let lockWatch: Watcher | undefined;
  let leaseWatch: Watcher | undefined;
  let reportTimer: NodeJS.Timeout | undefined;
  let locksListed!: () => void;
  let leasesListed!: () => void;
  const locksListedP = new Promise<void>((r) => (locksListed = r));
  const leasesListedP = new Promise<void>((r) => (leasesListed = r));

  const active = () => !terminating && !stopped;

  // ---- events -------------------------------------------------------------

  async function emit(target: EventTarget, reason: EventReason, type: 'Normal' | 'Warning', message: string, signal?: AbortSignal) {
    if (!can(perms, 'events', 'create')) return;
    try {
      const event = buildPodEvent({ target, reason, message, type, reportingInstance: podName, now: clock.now() });
      await client.createEvent(ns, event, { timeoutMs: 5_000, ...(signal ? { signal } : {}) });
    } catch (err) {
      log.warn({ err, reason }, 'could not record Event');
    }
  }

  /** A release of another pod's lock is told on that pod and on this one, so it is found from either. */
  async function emitOnBoth(holder: EventTarget, reason: EventReason, message: string) {
    await Promise.all([
      emit(holder, reason, 'Normal', message),
      emit({ name: podName, namespace: ns, uid: podUid }, reason, 'Normal', `${message} (by this pod's release hook)`),
    ]);
  }

  // ---- start --------------------------------------------------------------

  async function readOwnPod(): Promise<Pod | undefined> {
    for (let attempt = 1; active(); attempt++) {
      try {
        return await client.getPod(ns, podName, { timeoutMs: 5_000, signal: background.signal });
      } catch (err) {
        if (!active()) return undefined;
        const delay = backoffDelay(attempt, 500, 30_000);
        log[attempt > 3 ? 'warn' : 'info']({ err, retryInMs: delay }, 'cannot read own pod yet; R0-R3 wait for it');
        await sleep(delay, background.signal);
      }
    }
    return undefined;
  }

  /** Missing permissions, where an administrator looks: a Warning Event on this pod and a metric, besides the log line. */
  async function reportMissingPermissions(): Promise<void> {
    if (!perms) return;
    const missing = requiredPermissions.flatMap((p) => p.verbs.filter((verb) => !can(perms, p.resource, verb)).map((verb) => ({ resource: p.resource, verb })));
    if (missing.length === 0) return;
    for (const m of missing) metrics.permissionMissing(m.resource, m.verb);
    const message =
      `The leaderhook release hook lacks ${missing.map((m) => `${m.resource} ${m.verb}`).join(', ')} in namespace ${ns}: ${permissionEffects(perms).join('; ')}. ` +
      `Bind the Role of deploy/operator-rbac to service account ${ownPod?.spec?.serviceAccountName ?? 'default'}.`;
    await emit({ name: podName, namespace: ns, uid: podUid }, 'ReleaseHookPermissionsMissing', 'Warning', message);
  }

  async function start(): Promise<void> {
    const [checked, pod] = await Promise.all([
      checkPermissions(client, ns, log).catch((err: unknown) => {
        log.warn({ err }, 'permission check failed; trying anyway');
        return undefined;
      }),
      readOwnPod(),
    ]);
    perms = checked;
    if (!active() || !pod) return;
    ownPod = pod;
    void reportMissingPermissions();
    if (pod.metadata?.uid !== podUid) {
      log.error({ liveUid: pod.metadata?.uid, podUid }, 'own pod has another UID than POD_UID: R1 will never release');
    }
    lockName = lockNameFromAnnotations(pod) ?? lockName;
    observe = observeFromAnnotations(pod) ?? observe;
    log.info({ lockName: lockName ?? '(discover)', observe, marginSeconds, releaseTimeoutMs, podUid }, 'release hook running');
    if (!leaseIdentityIsPodName(pod)) {
      log.info(
        { hostNetwork: pod.spec?.hostNetwork === true, hostname: pod.spec?.hostname },
        "this pod's hostname is not its name, so no Lease identity can be told apart from another pod's: Leases are never released",
      );
    }
    startLeaseWatch();
    startLockWatch();
    reportTimer = setInterval(() => {
      reportWaits().catch((err: unknown) => log.error({ err }, 'wait report failed'));
    }, reportIntervalMs);
    reportTimer.unref();
    await Promise.all([locksListedP, leasesListedP]);
    if (!active()) return;
    log.info(
      {
        ownLocks: [...ownLocks.keys()],
        ownLeases: [...ownLeases.keys()],
        otherLocks: [...trackers.values()].map((t) => `${t.name} (${t.owner.name})`),
        apiBytesReceived: client.stats.bytesReceived,
      },
      'ready: locks and Leases listed',
    );
  }

  // ---- Leases (R1 only) -----------------------------------------------------

  function startLeaseWatch() {
    if (!can(perms, 'leases', 'list') || !can(perms, 'leases', 'watch')) {
      leasesListed();
      return;
    }
    leaseWatch = startWatch<Lease>(
      { client, path: paths.leases(ns), mode: 'list-watch', what: 'Leases', logger: log },
      {
        onList(items) {
          ownLeases.clear();
          for (const lease of items) if (isOwnLease(lease, podName) && lease.metadata?.name) ownLeases.set(lease.metadata.name, lease);
          leasesListed();
        },
        onEvent(type, lease) {
          const name = lease.metadata?.name;
          if (!name) return;
          if (type !== 'DELETED' && isOwnLease(lease, podName)) ownLeases.set(name, lease);
          else ownLeases.delete(name);
        },
        onHealth: (up) => metrics.watchUp('leases', up),
      },
    );
  }

  // ---- ConfigMap locks (R0, R2, R3; own locks for R1) ------------------------

  function startLockWatch() {
    if (!can(perms, 'configmaps', 'list') || !can(perms, 'configmaps', 'watch')) {
      locksListed();
      return;
    }
    lockWatch = startWatch<ConfigMap>(
      {
        client,
        path: paths.configMaps(ns),
        ...(lockName ? { fieldSelector: `metadata.name=${lockName}` } : {}),
        mode: 'list-watch',
        // Names and owners are all discovery needs; the data of every
        // ConfigMap of the namespace would make the hook grow with it.
        accept: metadataAccept,
        what: lockName ? `ConfigMap lock ${lockName}` : 'ConfigMap locks',
        logger: log,
      },
      {
        onList(items) {
          const seen = new Set<string>();
          for (const cm of items) {
            const name = cm.metadata?.name;
            if (!name) continue;
            seen.add(name);
            classify(cm);
          }
          for (const name of [...ownLocks.keys(), ...trackers.keys()]) if (!seen.has(name)) forget(name);
          locksListed();
        },
        onEvent(type, cm) {
          const name = cm.metadata?.name;
          if (!name) return;
          if (type === 'DELETED') forget(name);
          else classify(cm);
        },
        onHealth: (up) => metrics.watchUp('configmaps', up),
      },
    );
  }

  function classify(cm: ConfigMap) {
    const name = cm.metadata?.name as string;
    const owner = lockCandidateOwner(cm);
    // A lock already marked for deletion (by GC, a foreground delete) is on
    // its way out; deleting it again would change nothing.
    if (!owner || cm.metadata?.deletionTimestamp) {
      forget(name);
      return;
    }
    if (owner.uid === podUid) {
      const known = ownLocks.get(name);
      dropTracker(name);
      if (known?.verified && known.verified.metadata?.resourceVersion === cm.metadata?.resourceVersion) {
        known.meta = cm;
        return;
      }
      const entry: OwnLock = { meta: cm, ...(known?.verified ? { verified: known.verified } : {}) };
      ownLocks.set(name, entry);
      void verifyOwnLock(name, entry);
      return;
    }
    ownLocks.delete(name);
    let t = trackers.get(name);
    if (!t || t.owner.uid !== owner.uid) {
      if (t) dropTracker(name);
      t = { name, cm, owner, since: clock.now(), busy: false, dirty: false, failures: 0 };
      trackers.set(name, t);
    } else {
      t.cm = cm;
    }
    void evaluate(t);
  }

  /**
   * Reads an own candidate in full ahead of SIGTERM, so R1 can delete it at
   * once with preconditions of a version known to carry no data. A candidate
   * with data is the pod's own configuration: it stops being a candidate.
   */
  async function verifyOwnLock(name: string, entry: OwnLock): Promise<void> {
    let full: ConfigMap;
    try {
      full = await client.getConfigMap(ns, name, { timeoutMs: 5_000, signal: background.signal });
    } catch (err) {
      // the watch brings the delete; SIGTERM reads an unverified candidate itself
      if (active() && !isNotFound(err)) log.debug({ err, lock: `ConfigMap/${name}` }, 'cannot read own lock yet; SIGTERM will read it');
      return;
    }
    if (ownLocks.get(name) !== entry) return;
    const owner = lockOwner(full);
    if (owner?.uid === podUid) entry.verified = full;
    else if (!owner && lockCandidateOwner(full)?.uid === podUid) {
      ownLocks.delete(name);
      log.debug({ lock: `ConfigMap/${name}` }, 'own ConfigMap carries data: not a lock, left to garbage collection');
    }
  }

  /**
   * Reads a foreign candidate in full, once per version: only a ConfigMap
   * without data is a lock. True when `t` is a lock of the same holder.
   */
  async function verifyForeignLock(t: Tracker): Promise<boolean> {
    const rv = t.cm.metadata?.resourceVersion;
    if (t.verifiedRv === rv) return !t.notALock;
    let full: ConfigMap;
    try {
      full = await client.getConfigMap(ns, t.name, { timeoutMs: 5_000, signal: background.signal });
    } catch (err) {
      if (!active() || trackers.get(t.name) !== t) return false;
      if (isNotFound(err)) forget(t.name);
      else {
        log.warn({ err, lock: `ConfigMap/${t.name}` }, 'cannot read lock; will retry');
        scheduleRetry(t);
      }
      return false;
    }
    if (!active() || trackers.get(t.name) !== t) return false;
    const owner = lockOwner(full);
    if (owner && owner.uid !== t.owner.uid) {
      classify(full);
      return false;
    }
    t.verifiedRv = rv;
    t.notALock = !owner;
    if (t.notALock) {
      t.lock = undefined;
      metrics.clearWaiting(t.name);
      log.debug({ lock: `ConfigMap/${t.name}`, holder: t.owner.name }, 'ConfigMap owned by a pod carries data: not a lock, left to garbage collection');
      return false;
    }
    t.lock = full;
    watchHolder(t.owner.name);
    return true;
  }

  function forget(name: string) {
    ownLocks.delete(name);
    dropTracker(name);
  }

  function dropTracker(name: string) {
    const t = trackers.get(name);
    if (!t) return;
    trackers.delete(name);
    if (t.retry) clearTimeout(t.retry);
    metrics.clearWaiting(name);
    if (![...trackers.values()].some((o) => o.owner.name === t.owner.name)) {
      holderWatches.get(t.owner.name)?.stop();
      holderWatches.delete(t.owner.name);
    }
  }

  /** A holder's status changes without its lock changing: watch the pod too (watch only, by name). */
  function watchHolder(holderName: string) {
    if (holderWatches.has(holderName) || !can(perms, 'pods', 'watch') || !active()) return;
    const w = startWatch<Pod>(
      {
        client,
        path: paths.pods(ns),
        fieldSelector: `metadata.name=${holderName}`,
        mode: 'watch',
        what: `holder pod ${holderName}`,
        logger: log,
      },
      {
        onEvent() {
          for (const t of trackers.values()) if (t.owner.name === holderName) void evaluate(t);
        },
      },
    );
    holderWatches.set(holderName, w);
  }

  /**
   * Reads the holder live and applies R2/R3 (R0 when the holder has our
   * name). A watch event only triggers this; the decision always rests on
   * the live read.
   */
  async function evaluate(t: Tracker): Promise<void> {
    if (t.busy) {
      t.dirty = true;
      return;
    }
    t.busy = true;
    try {
      do {
        t.dirty = false;
        // Observe mode is only known once the own pod's annotations are read.
        if (!active() || !ownPod || trackers.get(t.name) !== t) return;
        if (!(await verifyForeignLock(t))) return;
        let holder: HolderLookup;
        try {
          holder = await client.getPod(ns, t.owner.name, { timeoutMs: 5_000, signal: background.signal });
        } catch (err) {
          if (isNotFound(err)) holder = notFound;
          else {
            if (active()) {
              log.warn({ err, lock: t.name }, 'cannot read holder pod; will retry');
              scheduleRetry(t);
            }
            return;
          }
        }
        if (!active() || trackers.get(t.name) !== t) return;
        const decision = decideHolderRelease(holder, t.owner);
        t.holder = holder;
        t.decision = decision;
        if (decision.release) {
          const rule = t.owner.name === podName ? 'R0' : decision.rule;
          await releaseForeignLock(t, rule, decision.message);
        } else {
          t.failures = 0;
        }
      } while (t.dirty);
    } finally {
      t.busy = false;
    }
  }

  function scheduleRetry(t: Tracker) {
    if (t.retry) clearTimeout(t.retry);
    t.failures++;
    t.retry = setTimeout(
      () => {
        t.retry = undefined;
        void evaluate(t);
      },
      backoffDelay(t.failures, 1_000, 30_000),
    );
    t.retry.unref();
  }

  async function releaseForeignLock(t: Tracker, rule: string, why: string) {
    const { owner } = t;
    // the version read live and found to be a lock; a change since is a 409
    const lock = t.lock as ConfigMap;
    const uid = lock.metadata?.uid as string;
    const resourceVersion = lock.metadata?.resourceVersion as string;
    const fields = { rule, lock: `ConfigMap/${t.name}`, holder: owner.name, holderUid: owner.uid, observe };
    const target = { name: owner.name, namespace: ns, uid: owner.uid };
    if (observe) {
      const key = `${uid}/${resourceVersion}/${rule}`;
      if (t.observedKey === key) return;
      t.observedKey = key;
      log.info(fields, `would release lock ${t.name} (${rule}: ${why}); observe mode, releasing nothing`);
      metrics.release(rule, 'ConfigMap', 'observed');
      await emitOnBoth(target, 'LeaderLockWouldRelease', `Would release leader lock ConfigMap ${t.name} (${rule}: ${why}); observe mode`);
      return;
    }
    try {
      await client.deleteConfigMap(ns, t.name, { uid, resourceVersion }, { timeoutMs: 5_000, signal: background.signal });
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) {
        log.info({ ...fields, err }, `lock ${t.name} already deleted or changed by someone else; nothing to do`);
        metrics.release(rule, 'ConfigMap', 'moved');
        return;
      }
      if (!active()) return;
      log.warn({ ...fields, err }, `releasing lock ${t.name} failed; will retry`);
      metrics.release(rule, 'ConfigMap', 'failed');
      scheduleRetry(t);
      return;
    }
    log.info(fields, `released lock ${t.name} (${rule}: ${why})`);
    metrics.release(rule, 'ConfigMap', 'released');
    dropTracker(t.name);
    await emitOnBoth(target, 'LeaderLockReleased', `Released leader lock ConfigMap ${t.name} (${rule}: ${why})`);
  }

  // ---- the waiting side ------------------------------------------------------

  /** Whether this pod waits for the lock: pinned to it, or (discovering) holds none and runs the same workload as the holder. */
  function isStandbyFor(t: Tracker): boolean {
    if (t.notALock) return false;
    if (lockName) return t.name === lockName;
    if (ownLocks.size > 0 || !ownPod || !t.holder || t.holder === notFound) return false;
    return sameWorkload(ownPod, t.holder);
  }

  /**
   * Reports a standby's wait when it is a problem or changes: the holder not
   * running, not Ready, terminal but not releasable, or back to Running after
   * one of these. A healthy Running leader holding its lock is the normal case
   * and gives one log line, no Event: an Event every interval would be noise.
   */
  async function reportWaits() {
    for (const t of [...trackers.values()]) {
      if (!active()) return;
      await evaluate(t); // refresh from a live read; may release
      const d = t.decision;
      if (trackers.get(t.name) !== t || !d || d.release || !t.lock) continue;
      const waitedMs = clock.now() - t.since;
      metrics.waiting(t.name, t.owner.name, d.state, waitedMs / 1000);
      if (!isStandbyFor(t) || waitedMs < reportIntervalMs / 2 || d.state === t.reportedState) continue;
      const previous = t.reportedState;
      t.reportedState = d.state;
      const node = t.holder && t.holder !== notFound ? t.holder.spec?.nodeName : undefined;
      const fields = {
        lock: `ConfigMap/${t.name}`,
        holder: t.owner.name,
        holderState: d.state,
        previousState: previous,
        waitedSeconds: Math.round(waitedMs / 1000),
        node,
      };
      if (d.state === 'running') {
        log.info(fields, `leader lock ConfigMap ${t.name} is held by pod ${t.owner.name}, which is Running and Ready: waiting`);
        if (previous !== undefined) {
          await emit(
            { name: podName, namespace: ns, uid: podUid },
            'LeaderLockHeld',
            'Normal',
            `Leader lock ConfigMap ${t.name}: holder pod ${t.owner.name} is Running and Ready again (was ${previous}).`,
          );
        }
        continue;
      }
      const message =
        `Leader lock ConfigMap ${t.name} is held by pod ${t.owner.name} (${d.state}): ${d.message}. Waiting ${formatDuration(waitedMs)}. ` +
        'It is freed automatically once that pod is deleted or has finished. Safe remedies: delete that pod' +
        (node ? `; only if node ${node} is known to be down, taint it node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` : '') +
        '. Restarting this pod does not help.';
      log.warn(fields, message);
      await emit({ name: podName, namespace: ns, uid: podUid }, 'LeaderLockHeld', 'Warning', message);
    }
  }

  // ---- R1: SIGTERM -------------------------------------------------------------

  /**
   * The own locks, in full. From the watch's cache when it is connected: a
   * candidate already read in full is used as is (no request); one that is
   * not yet is read now, in parallel with the own pod. Only when the watch is
   * down does the SIGTERM path look for them: the pinned lock by name, else
   * a metadata list of the namespace's ConfigMaps.
   */
  async function ownLockCandidates(signal: AbortSignal): Promise<ConfigMap[]> {
    const opts = { signal, timeoutMs: releaseTimeoutMs };
    const mine = (cm: ConfigMap | undefined): cm is ConfigMap => lockOwner(cm)?.uid === podUid;
    const readMine = (name: string) =>
      client.getConfigMap(ns, name, opts).then(
        (cm) => (mine(cm) ? cm : undefined),
        (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
      );
    let names: string[];
    const known: ConfigMap[] = [];
    if (lockWatch?.synced && lockWatch.healthy) {
      names = [];
      for (const [name, entry] of ownLocks) {
        if (entry.verified) known.push(entry.verified);
        else names.push(name);
      }
    } else if (lockName) {
      names = [lockName];
    } else {
      const list = await client.listConfigMapsMetadata(ns, opts);
      names = list.items.filter((cm) => lockCandidateOwner(cm)?.uid === podUid).map((cm) => cm.metadata?.name as string);
    }
    const read = await Promise.all(names.map(readMine));
    return [...known, ...read.filter(mine)];
  }

  async function ownLeaseCandidates(signal: AbortSignal): Promise<Lease[]> {
    if (leaseWatch?.synced && leaseWatch.healthy) return [...ownLeases.values()];
    if (!can(perms, 'leases', 'list')) return [];
    const list = await client.listLeases(ns, { signal, timeoutMs: releaseTimeoutMs });
    return list.items.filter((l) => isOwnLease(l, podName));
  }

  /**
   * Applies `release` to a lock as it was read. On a conflict (someone wrote
   * it in between) re-reads it once and tries again only while it is still
   * this pod's; gone, or no longer ours, means someone else moved it.
   */
  async function releaseAsRead<T>(
    read: T,
    release: (lock: T) => Promise<unknown>,
    reread: () => Promise<T>,
    stillOurs: (lock: T) => boolean,
  ): Promise<'released' | 'moved'> {
    try {
      await release(read);
      return 'released';
    } catch (err) {
      if (isNotFound(err)) return 'moved';
      if (!isConflict(err)) throw err;
    }
    let fresh: T;
    try {
      fresh = await reread();
    } catch (err) {
      if (isNotFound(err)) return 'moved';
      throw err;
    }
    if (!stillOurs(fresh)) return 'moved';
    try {
      await release(fresh);
      return 'released';
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return 'moved';
      throw err;
    }
  }

  /** Deletes the own lock with preconditions {uid, resourceVersion} of what was read. */
  function releaseOwnConfigMap(cm: ConfigMap, signal: AbortSignal): Promise<'released' | 'moved'> {
    const name = cm.metadata?.name as string;
    const opts = { signal, timeoutMs: releaseTimeoutMs };
    return releaseAsRead(
      cm,
      (lock) => client.deleteConfigMap(ns, name, { uid: lock.metadata?.uid, resourceVersion: lock.metadata?.resourceVersion }, opts),
      () => client.getConfigMap(ns, name, opts),
      (lock) => lockOwner(lock)?.uid === podUid,
    );
  }

  /** Writes the leaderless record over the own Lease, guarded by the resourceVersion read. */
  function releaseOwnLease(lease: Lease, signal: AbortSignal): Promise<'released' | 'moved'> {
    const name = lease.metadata?.name as string;
    const opts = { signal, timeoutMs: releaseTimeoutMs };
    return releaseAsRead(
      lease,
      (current) => client.updateLease(ns, releasedLease(current, clock.now()), opts),
      () => client.getLease(ns, name, opts),
      (current) => isOwnLease(current, podName),
    );
  }

  async function releaseOwn(t: number, signal: AbortSignal, result: TerminateResult): Promise<void> {
    // Reads start together; nothing is released before the own pod's live read decides.
    const podP = client.getPod(ns, podName, { signal, timeoutMs: releaseTimeoutMs }).then(
      (p) => p as Pod | undefined,
      (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
    );
    const cmsP = ownLockCandidates(signal);
    const leasesP = ownLeaseCandidates(signal);
    cmsP.catch(() => {});
    leasesP.catch(() => {});
    let pod: Pod | undefined;
    try {
      pod = await podP;
    } catch (err) {
      result.decision = { release: false, refusal: 'ownPodUnreadable', message: `reading own pod failed: ${(err as Error).message}` };
      return;
    }
    const decision = decideOwnRelease(pod, podUid, t, marginSeconds);
    result.decision = decision;
    if (!decision.release) return;
    const observeNow = observeFromAnnotations(pod) ?? observe;
    const work: Promise<void>[] = [];
    const one = async (kind: 'ConfigMap' | 'Lease', name: string, release: () => Promise<'released' | 'moved'>) => {
      const id = `${kind}/${name}`;
      if (observeNow) {
        result.observed.push(id);
        metrics.release('R1', kind, 'observed');
        return;
      }
      try {
        const outcome = await release();
        (outcome === 'released' ? result.released : result.moved).push(id);
        metrics.release('R1', kind, outcome);
      } catch (err) {
        result.failed.push(`${id}: ${(err as Error).message}`);
        metrics.release('R1', kind, 'failed');
      }
    };
    try {
      for (const cm of await cmsP) work.push(one('ConfigMap', cm.metadata?.name as string, () => releaseOwnConfigMap(cm, signal)));
    } catch (err) {
      result.failed.push(`finding own ConfigMap locks: ${(err as Error).message}`);
    }
    try {
      const leases = pod && leaseIdentityIsPodName(pod) ? await leasesP : [];
      for (const lease of leases) work.push(one('Lease', lease.metadata?.name as string, () => releaseOwnLease(lease, signal)));
    } catch (err) {
      result.failed.push(`finding own Leases: ${(err as Error).message}`);
    }
    await Promise.all(work);
    const self = { name: podName, namespace: ns, uid: podUid };
    const events: Promise<void>[] = [];
    for (const id of result.released) events.push(emit(self, 'LeaderLockReleased', 'Normal', `Released leader lock ${id} (R1: ${decision.message})`, signal));
    for (const id of result.observed)
      events.push(emit(self, 'LeaderLockWouldRelease', 'Normal', `Would release leader lock ${id} (R1: ${decision.message}); observe mode`, signal));
    await Promise.all(events);
  }

  function onTerminate(): Promise<TerminateResult> {
    if (terminating) return terminating;
    // The time of the signal, before anything else: R1 compares it with the deadline.
    const t = clock.now();
    const started = performance.now();
    const result: TerminateResult = {
      decision: { release: false, refusal: 'timeout', message: `no decision within ${releaseTimeoutMs} ms` },
      released: [],
      observed: [],
      moved: [],
      failed: [],
      durationMs: 0,
    };
    terminating = (async () => {
      shutdownBackground();
      const budget = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        budget.abort();
      }, releaseTimeoutMs);
      try {
        await Promise.race([
          releaseOwn(t, budget.signal, result),
          new Promise<void>((resolve) => budget.signal.addEventListener('abort', () => resolve(), { once: true })),
        ]);
      } catch (err) {
        result.failed.push((err as Error).message);
      } finally {
        clearTimeout(timer);
        // cancels whatever is still in flight once the budget is spent
        budget.abort();
      }
      result.durationMs = Math.round((performance.now() - started) * 10) / 10;
      const fields = {
        rule: 'R1',
        signalAt: new Date(t).toISOString(),
        durationMs: result.durationMs,
        released: result.released,
        observed: result.observed,
        moved: result.moved,
        failed: result.failed,
      };
      const d = result.decision;
      if (timedOut) {
        log.warn(fields, `SIGTERM: release gave up after ${releaseTimeoutMs} ms; garbage collection remains the fallback`);
      } else if (!d.release) {
        metrics.refused('R1', d.refusal);
        log.info({ ...fields, refusal: d.refusal }, `SIGTERM: releasing nothing: ${d.message}`);
      } else if (result.failed.length > 0) {
        log.warn(fields, `SIGTERM: some own locks could not be released (${d.message})`);
      } else if (result.released.length + result.observed.length === 0) {
        log.info(fields, `SIGTERM: operator stopped; this pod holds no lock (${d.message})`);
      } else {
        const what = result.observed.length > 0 ? `would release ${result.observed.join(', ')} (observe mode)` : `released ${result.released.join(', ')}`;
        log.info(fields, `SIGTERM: ${what} (${d.message})`);
      }
      await metrics.close().catch(() => {});
      return result;
    })();
    return terminating;
  }

  function shutdownBackground() {
    background.abort();
    lockWatch?.stop();
    leaseWatch?.stop();
    for (const w of holderWatches.values()) w.stop();
    for (const t of trackers.values()) if (t.retry) clearTimeout(t.retry);
    if (reportTimer) clearInterval(reportTimer);
    locksListed();
    leasesListed();
  }

  async function stop(): Promise<void> {
    if (stopped) return;
    stopped = true;
    shutdownBackground();
    await Promise.all([lockWatch?.done, leaseWatch?.done, ...[...holderWatches.values()].map((w) => w.done)]);
    if (!terminating) await metrics.close().catch(() => {});
  }

  const ready = start().catch((err: unknown) => {
    log.error({ err }, 'release hook start failed');
  });
  return { ready, onTerminate, stop };
}

function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 120) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  return `${Math.floor(m / 60)}h${m % 60 ? `${m % 60}m` : ''}`;
}
