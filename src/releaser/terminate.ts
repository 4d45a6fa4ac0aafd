/**
 * R1, the SIGTERM path: note the time of the signal, read the own pod live,
 * and release the own locks only when decideOwnRelease says the operator has
 * provably stopped — all within the release budget, with what was prepared
 * ahead of SIGTERM (no module loading, no discovery when the watch is up).
 * The candidates come through an interface, so this runs without any watch.
 */
import { isConflict, isNotFound } from '../kube/errors.ts';
import type { ConfigMap, Lease, Pod } from '../kube/types.ts';
import type { HookContext } from './context.ts';
import type { EventRecorder } from './events.ts';
import type { TerminateResult } from './releaser.ts';
import { decideOwnRelease, isOwnLease, leaseIdentityIsPodName, lockOwner, observeMode, releasedLease } from './rules.ts';

/** This pod's own locks, as R1 gets them. */
export interface OwnCandidates {
  /** The own ConfigMap locks, in full (a version known to carry no data). */
  locks(signal: AbortSignal): Promise<ConfigMap[]>;
  /** The own Leases. */
  leases(signal: AbortSignal): Promise<Lease[]>;
}

export interface TerminateSettings {
  marginSeconds: number;
  releaseTimeoutMs: number;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  observe: boolean;
  /** Called first, at the signal: ends the background work, which must not race the release. */
  stopBackground(): void;
}

type Outcome = 'released' | 'moved';

/**
 * Applies `release` to a lock as it was read. On a conflict (someone wrote
 * it in between) re-reads it once and tries again only while it is still
 * this pod's; gone, or no longer ours, means someone else moved it.
 */
export async function releaseAsRead<T>(
  read: T,
  release: (lock: T) => Promise<unknown>,
  reread: () => Promise<T>,
  stillOurs: (lock: T) => boolean,
): Promise<Outcome> {
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

/** Returns onTerminate: the first call runs R1, every later call gets the same result. */
export function terminator(ctx: HookContext, events: EventRecorder, candidates: OwnCandidates, settings: TerminateSettings): () => Promise<TerminateResult> {
  const { client, ns, podName, podUid, clock, log, metrics } = ctx;
  const { marginSeconds, releaseTimeoutMs } = settings;
  let terminating: Promise<TerminateResult> | undefined;

  /** Deletes the own lock with preconditions {uid, resourceVersion} of what was read. */
  function releaseConfigMap(cm: ConfigMap, signal: AbortSignal): Promise<Outcome> {
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
  function releaseLease(lease: Lease, signal: AbortSignal): Promise<Outcome> {
    const name = lease.metadata?.name as string;
    const opts = { signal, timeoutMs: releaseTimeoutMs };
    return releaseAsRead(
      lease,
      (current) => client.updateLease(ns, releasedLease(current, clock.now()), opts),
      () => client.getLease(ns, name, opts),
      (current) => isOwnLease(current, podName),
    );
  }

  /** Decides on the live own pod and releases (or, observing, notes) each own lock; fills `result`. */
  async function releaseOwn(t: number, signal: AbortSignal, result: TerminateResult): Promise<void> {
    // Reads start together; nothing is released before the own pod's live read decides.
    const podP = client.getPod(ns, podName, { signal, timeoutMs: releaseTimeoutMs }).then(
      (p) => p as Pod | undefined,
      (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
    );
    // a failure after the budget ran out is the budget's: the summary line says so
    const warn = (fields: Record<string, unknown>, msg: string) => {
      if (!signal.aborted) log.warn({ rule: 'R1', ...fields }, msg);
    };
    const cmsP = candidates.locks(signal);
    const leasesP = candidates.leases(signal);
    cmsP.catch(() => {});
    leasesP.catch(() => {});
    let pod: Pod | undefined;
    try {
      pod = await podP;
    } catch (err) {
      warn({ err }, 'R1: cannot read own pod');
      result.decision = { release: false, refusal: 'ownPodUnreadable', message: `reading own pod failed: ${(err as Error).message}` };
      return;
    }
    const decision = decideOwnRelease(pod, podUid, t, marginSeconds);
    result.decision = decision;
    if (!decision.release) return;
    // the annotation as it is now, read live with the decision
    const observe = observeMode(pod, settings.observe);
    const work: Promise<void>[] = [];
    const one = async (kind: 'ConfigMap' | 'Lease', name: string, release: () => Promise<Outcome>) => {
      const id = `${kind}/${name}`;
      if (observe) {
        result.observed.push(id);
        metrics.release('R1', kind, 'observed');
        return;
      }
      try {
        const outcome = await release();
        (outcome === 'released' ? result.released : result.moved).push(id);
        metrics.release('R1', kind, outcome);
      } catch (err) {
        warn({ lock: id, err }, `R1: releasing ${id} failed`);
        result.failed.push(`${id}: ${(err as Error).message}`);
        metrics.release('R1', kind, 'failed');
      }
    };
    try {
      for (const cm of await cmsP) work.push(one('ConfigMap', cm.metadata?.name as string, () => releaseConfigMap(cm, signal)));
    } catch (err) {
      warn({ err }, 'R1: finding own ConfigMap locks failed');
      result.failed.push(`finding own ConfigMap locks: ${(err as Error).message}`);
    }
    try {
      const leases = pod && leaseIdentityIsPodName(pod) ? await leasesP : [];
      for (const lease of leases) work.push(one('Lease', lease.metadata?.name as string, () => releaseLease(lease, signal)));
    } catch (err) {
      warn({ err }, 'R1: finding own Leases failed');
      result.failed.push(`finding own Leases: ${(err as Error).message}`);
    }
    await Promise.all(work);
  }

  /** An Event on this pod for each lock released or, observing, that would have been. */
  async function recordEvents(result: TerminateResult, signal: AbortSignal): Promise<void> {
    const why = result.decision.message;
    await Promise.all([
      ...result.released.map((id) => events.emit(ctx.self, 'LeaderLockReleased', 'Normal', `Released leader lock ${id} (R1: ${why})`, signal)),
      ...result.observed.map((id) =>
        events.emit(ctx.self, 'LeaderLockWouldRelease', 'Normal', `Would release leader lock ${id} (R1: ${why}); observe mode`, signal),
      ),
    ]);
  }

  async function run(t: number, started: number, result: TerminateResult): Promise<TerminateResult> {
    settings.stopBackground();
    const budget = new AbortController();
    let timedOut = false;
    // what the budget is spent on: the locks first, then the Events telling of them
    let phase: 'release' | 'events' = 'release';
    const timer = setTimeout(() => {
      timedOut = true;
      budget.abort();
    }, releaseTimeoutMs);
    try {
      await Promise.race([
        (async () => {
          await releaseOwn(t, budget.signal, result);
          phase = 'events';
          await recordEvents(result, budget.signal);
        })(),
        new Promise<void>((resolve) => budget.signal.addEventListener('abort', () => resolve(), { once: true })),
      ]);
    } catch (err) {
      log.error({ rule: 'R1', err }, 'R1: release failed');
      result.failed.push((err as Error).message);
    } finally {
      clearTimeout(timer);
      // cancels whatever is still in flight once the budget is spent
      budget.abort();
    }
    // what the budget cut short still settles later: it must not change the result given out
    const settled: TerminateResult = {
      ...result,
      released: [...result.released],
      observed: [...result.observed],
      moved: [...result.moved],
      failed: [...result.failed],
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...(timedOut ? { timedOut: phase } : {}),
    };
    logOutcome(t, settled);
    await metrics.close().catch(() => {});
    return settled;
  }

  function logOutcome(t: number, result: TerminateResult): void {
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
    // every lock was dealt with in time; only the Events telling of them were not
    const lateEvents = result.timedOut === 'events' ? `; Event not recorded within ${releaseTimeoutMs} ms` : '';
    if (result.timedOut === 'release') {
      log.warn(fields, `SIGTERM: release gave up after ${releaseTimeoutMs} ms; garbage collection remains the fallback`);
    } else if (!d.release) {
      metrics.refused('R1', d.refusal);
      log.info({ ...fields, refusal: d.refusal }, `SIGTERM: releasing nothing: ${d.message}`);
    } else if (result.failed.length > 0) {
      log.warn(fields, `SIGTERM: some own locks could not be released (${d.message})${lateEvents}`);
    } else if (result.released.length + result.observed.length === 0) {
      log.info(fields, `SIGTERM: operator stopped; this pod holds no lock (${d.message})`);
    } else {
      const what = result.observed.length > 0 ? `would release ${result.observed.join(', ')} (observe mode)` : `released ${result.released.join(', ')}`;
      log[lateEvents ? 'warn' : 'info'](fields, `SIGTERM: ${what} (${d.message})${lateEvents}`);
    }
  }

  return function onTerminate(): Promise<TerminateResult> {
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
    terminating = run(t, started, result);
    return terminating;
  };
}
