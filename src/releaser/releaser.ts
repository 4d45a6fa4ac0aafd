/**
 * The release hook: a native sidecar that frees its pod's leader locks once
 * the operator has provably stopped (R1), and frees leader-for-life locks
 * (ConfigMaps, and Leases owned by a pod) whose holder can never run again (R0, R2, R3). docs/design.md#the-release-rules is
 * the contract; the rules themselves live in rules.ts as pure functions. This file wires the
 * parts, each of which owns its state:
 *   lock-cache.ts     the ConfigMap watch and its cache of lock candidates, which the next two handle
 *   held-leases.ts    the Lease watch, the Leases of this pod, and the store of Leases owned by a pod
 *   own-locks.ts      this pod's own locks (R1's candidates)
 *   foreign-locks.ts  the locks of other pods and their holders (R0, R2, R3), one per lock kind (lock-kinds.ts)
 *   identity-leases.ts  the Leases other pods hold by identity (R2 only)
 *   kopf-peers.ts     kopf peering entries of other pods (R2 only), in a pod whose kopf identity is its UID
 *   wait-reports.ts   what a waiting standby reports
 *   terminate.ts      the SIGTERM path (R1)
 *   start.ts          permissions and the own pod, at start
 *   events.ts         Kubernetes Events
 */
import type { KubeClient } from '../kube/client.ts';
import type { Logger } from '../line-log.ts';
import type { Clock, HookContext } from './context.ts';
import { releaseDefaults } from './defaults.ts';
import { eventRecorder } from './events.ts';
import { bothKinds, ForeignLocks } from './foreign-locks.ts';
import { HeldLeases } from './held-leases.ts';
import { IdentityLeases } from './identity-leases.ts';
import { kopfIdentity } from './kopf-peering.ts';
import { KopfPeers } from './kopf-peers.ts';
import { podWatchOf } from './holder-watches.ts';
import { LockCache } from './lock-cache.ts';
import { leaseLocks } from './lock-kinds.ts';
import { noMetrics, type ReleaserMetrics, startMetrics } from './metrics.ts';
import { OwnLocks } from './own-locks.ts';
import { lockNameFromAnnotations, type OwnDecision, observeMode } from './rules.ts';
import { KnownPermissions } from './permissions.ts';
import { checkPermissionsOrAssume, logRunning, readOwnPod, reportMissingPermissions, requirePodIdentity } from './start.ts';
import { Terminator } from './terminate.ts';
import { WaitReporter } from './wait-reports.ts';

export type { Clock } from './context.ts';

export interface ReleaserOptions {
  podName: string;
  podNamespace: string;
  podUid: string;
  /** The hostname the process sees (main.ts: os.hostname()); an identity may carry it when it is an FQDN of the pod's hostname. */
  hostname?: string;
  /** Pins the ConfigMap lock's name; pod annotation leaderhook.io/lock wins. Discovered when unset. */
  lockName?: string;
  /** R1: a SIGTERM must come this long before the deletion deadline (default releaseDefaults.marginSeconds). */
  marginSeconds?: number;
  /** Log and record Events for what would be released, release nothing; annotation leaderhook.io/observe can turn it on, not off. */
  observe?: boolean;
  /** The SIGTERM release gives up after this long (default releaseDefaults.releaseTimeoutMs). */
  releaseTimeoutMs?: number;
  /** How often a waiting standby reports the holder (default releaseDefaults.waitReportIntervalSeconds). */
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
  /** Leases held by an identity that another pod could carry, left to expire, each with why. */
  kept: string[];
  failed: string[];
  durationMs: number;
  /**
   * Set when the release timeout cut the work short: `release` while the own
   * pod or locks were still being read or released (garbage collection
   * remains the fallback); `events` once every lock was dealt with, when only
   * the Events telling of it were not recorded in time.
   */
  timedOut?: 'release' | 'events';
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

export async function runReleaser(options: ReleaserOptions): Promise<RunningReleaser> {
  requirePodIdentity(options);
  const { client, podName, podUid } = options;
  const ns = options.podNamespace;
  const marginSeconds = options.marginSeconds ?? releaseDefaults.marginSeconds;
  const releaseTimeoutMs = options.releaseTimeoutMs ?? releaseDefaults.releaseTimeoutMs;
  const reportIntervalMs = (options.waitReportIntervalSeconds ?? releaseDefaults.waitReportIntervalSeconds) * 1000;
  // the flag; the own pod's annotation, read live before each release, can turn it on, not off
  const observe = options.observe ?? false;
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
  const ctx: HookContext = {
    client,
    ns,
    podName,
    podUid,
    hostname: options.hostname,
    self: { name: podName, namespace: ns, uid: podUid },
    log,
    clock: options.clock ?? { now: Date.now },
    metrics,
    signal: background.signal,
    perms: new KnownPermissions(),
  };
  const events = eventRecorder(ctx);
  const cache = new LockCache(ctx, options.lockName || undefined);
  const heldLeases = new HeldLeases(ctx);
  const own = new OwnLocks(ctx, { client, cache, leases: heldLeases, releaseTimeoutMs });
  const watchPod = podWatchOf(ctx);
  const foreign = new ForeignLocks(ctx, { client, events, cache, watchPod, observe });
  // Leases owned by a pod, from the Lease watch: the same rules (docs/design.md#leases-owned-by-a-pod)
  const foreignLeases = new ForeignLocks(ctx, { kind: leaseLocks, client, events, cache: heldLeases.locks, watchPod, observe });
  // Leases other pods hold by identity: R2 only (docs/design.md#r2-for-leases-held-by-identity)
  const identityLeases = new IdentityLeases(ctx, { client, events, watchPod, observe });
  heldLeases.subscribe(identityLeases);
  // kopf peering entries of other pods: R2 only (docs/design.md#kopf-peering-entries)
  const kopfPeers = new KopfPeers(ctx, { events, watchPod, observe });
  const waits = new WaitReporter(ctx, events, { foreign: bothKinds(foreign, foreignLeases), own }, reportIntervalMs);
  const terminator = new Terminator(ctx, { client, events, candidates: own }, { marginSeconds, releaseTimeoutMs, observe, stopBackground });
  let terminating = false;
  let stopped = false;

  function stopBackground(): void {
    background.abort();
    cache.stop();
    heldLeases.stop();
    foreign.stop();
    foreignLeases.stop();
    identityLeases.stop();
    kopfPeers.stop();
    waits.stop();
  }

  async function start(): Promise<void> {
    const [perms, pod] = await Promise.all([checkPermissionsOrAssume(ctx), readOwnPod(ctx)]);
    if (perms) ctx.perms.learn(perms);
    if (background.signal.aborted || !pod) return;
    void reportMissingPermissions(ctx, events, pod);
    const lockName = lockNameFromAnnotations(pod) ?? cache.lockName;
    logRunning(ctx, pod, { lockName, observe: observeMode(pod, observe), marginSeconds, releaseTimeoutMs });
    // a kopf standby follows the other peers' entries; any other pod has nothing to follow there
    const kopf = kopfIdentity(pod);
    const listed = Promise.all([heldLeases.start(), cache.start(lockName), kopf.identity ? kopfPeers.start(kopf.identity) : undefined]);
    waits.start(pod);
    // a list the API keeps failing must not hold up a stop
    await Promise.race([listed, new Promise<void>((resolve) => background.signal.addEventListener('abort', () => resolve(), { once: true }))]);
    if (background.signal.aborted) return;
    log.info(
      {
        ownLocks: own.known.locks,
        ownLeases: own.known.leases,
        otherLocks: [...foreign.tracked(), ...foreignLeases.tracked()].map((t) => `${t.kind}/${t.name} (${t.owner.name})`),
        apiBytesReceived: client.stats.bytesReceived,
      },
      'ready: locks and Leases listed',
    );
  }

  const ready = start().catch((err: unknown) => {
    log.error({ err }, 'release hook start failed');
  });
  return {
    ready,
    onTerminate() {
      terminating = true;
      return terminator.onTerminate();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      stopBackground();
      await Promise.all([cache.done, heldLeases.done, foreign.done, foreignLeases.done, identityLeases.done, kopfPeers.done]);
      if (!terminating) await metrics.close().catch(() => {});
    },
  };
}
