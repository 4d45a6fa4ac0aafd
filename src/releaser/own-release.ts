/**
 * R1's work once SIGTERM came (docs/design.md#r1-own-stop): read the own pod
 * live, release the own locks only when decideOwnRelease says the operator
 * has provably stopped, and tell of it in Events. The candidates come through
 * an interface, so this runs without any watch; the API through a narrow
 * client, which a test fakes in memory.
 */
import type { KubeClient } from '../kube/client.ts';
import { isForbidden, isNotFound } from '../kube/errors.ts';
import type { ConfigMap, KopfPeering, Lease, Pod } from '../kube/types.ts';
import { allowed, type ContextWithoutClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import { ownLeases } from './held-leases.ts';
import { decideIdentityRelease, heldByName, ownIdentityNames } from './lease-identity.ts';
import { hasPeerEntry, kopfIdentity, type PeeringScope, peeringNamespace, peeringScopes } from './kopf-peering.ts';
import { configMapLocks, leaseLocks, type ReleasedKind } from './lock-kinds.ts';
import { type LockWriteOutcome, type OwnLockWriter, releaseOwnLease, releaseOwnLock, releaseOwnPeerEntry } from './release-as-read.ts';
import type { TerminateResult } from './releaser.ts';
import { decideOwnRelease, observeMode } from './rules.ts';

/** This pod's own locks, as R1 gets them. */
export interface OwnCandidates {
  /** The own ConfigMap locks, in full (a version known to carry no data). */
  locks(signal: AbortSignal): Promise<ConfigMap[]>;
  /** Every Lease of the namespace: which are this pod's is decided with its live read. */
  leases(signal: AbortSignal): Promise<Lease[]>;
}

/**
 * What R1 asks of the API: the own pod, the namespace's pods when a Lease
 * may be held by identity, and a read and a guarded write of each own lock.
 */
export type OwnReleaseClient = OwnLockWriter & Pick<KubeClient, 'getPod' | 'listPods' | 'listKopfPeerings'>;

export interface OwnReleaseSettings {
  marginSeconds: number;
  releaseTimeoutMs: number;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  observe: boolean;
}

export class OwnRelease {
  readonly #ctx: ContextWithoutClient;
  readonly #client: OwnReleaseClient;
  readonly #events: EventRecorder;
  readonly #candidates: OwnCandidates;
  readonly #marginSeconds: number;
  readonly #releaseTimeoutMs: number;
  readonly #observe: boolean;

  constructor(ctx: ContextWithoutClient, parts: { client: OwnReleaseClient; events: EventRecorder; candidates: OwnCandidates }, settings: OwnReleaseSettings) {
    this.#ctx = ctx;
    this.#client = parts.client;
    this.#events = parts.events;
    this.#candidates = parts.candidates;
    this.#marginSeconds = settings.marginSeconds;
    this.#releaseTimeoutMs = settings.releaseTimeoutMs;
    this.#observe = settings.observe;
  }

  /** Decides on the live own pod and releases (or, observing, notes) each own lock; fills `result`. */
  async release(t: number, signal: AbortSignal, result: TerminateResult): Promise<void> {
    const ctx = this.#ctx;
    const { ns, podName, podUid, log, metrics } = ctx;
    const client = this.#client;
    const opts = { signal, timeoutMs: this.#releaseTimeoutMs };
    // Reads start together; nothing is released before the own pod's live read decides.
    const podP = client.getPod(ns, podName, opts).then(
      (p) => p as Pod | undefined,
      (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
    );
    // a failure after the budget ran out is the budget's: the summary line says so
    const warn = (fields: Record<string, unknown>, msg: string) => {
      if (!signal.aborted) log.warn({ rule: 'R1', ...fields }, msg);
    };
    const cmsP = this.#candidates.locks(signal);
    const leasesP = this.#candidates.leases(signal);
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
    const decision = decideOwnRelease(pod, podUid, t, this.#marginSeconds);
    result.decision = decision;
    if (!decision.release) return;
    // the annotation as it is now, read live with the decision
    const observe = observeMode(pod, this.#observe);
    const work: Promise<void>[] = [];
    const one = async (kind: ReleasedKind, name: string, release: () => Promise<LockWriteOutcome>) => {
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
      for (const cm of await cmsP) work.push(one('ConfigMap', cm.metadata?.name as string, () => releaseOwnLock(client, ctx, configMapLocks, cm, opts)));
    } catch (err) {
      warn({ err }, 'R1: finding own ConfigMap locks failed');
      result.failed.push(`finding own ConfigMap locks: ${(err as Error).message}`);
    }
    try {
      const names = ownIdentityNames(pod as Pod, ctx.hostname);
      const { byIdentity, byOwner } = ownLeases(await leasesP, { podUid, names });
      // owned by this pod's UID: deleted like its ConfigMap lock (docs/design.md#leases-owned-by-a-pod)
      for (const lease of byOwner) work.push(one('Lease', lease.metadata?.name as string, () => releaseOwnLock(client, ctx, leaseLocks, lease, opts)));
      // listed once the Leases' versions are in hand: a pod that took one since is in the list (docs/design.md#leases-held-by-identity)
      const pods = byIdentity.length > 0 ? await this.#listPods(opts) : undefined;
      for (const lease of byIdentity) {
        const id = `Lease/${lease.metadata?.name}`;
        const proof = pods
          ? decideIdentityRelease(lease, ctx, pods)
          : { release: false as const, others: [], message: 'the hook may not list pods, so nothing proves no other pod carries its hostname: left to expire' };
        if (!proof.release) {
          log.info({ rule: 'R1', lock: id, holder: lease.spec?.holderIdentity, others: proof.others }, `R1: ${id} kept: ${proof.message}`);
          result.kept.push(`${id}: ${proof.message}`);
          metrics.release('R1', 'Lease', 'kept');
          continue;
        }
        // a version read again after a conflict is released only if a new pod list proves it ours again
        const stillOurs = async (current: Lease) => {
          if (!heldByName(current, names)) return false;
          const fresh = await this.#listPods(opts);
          return fresh !== undefined && decideIdentityRelease(current, ctx, fresh).release;
        };
        work.push(one('Lease', lease.metadata?.name as string, () => releaseOwnLease(client, ctx, lease, stillOurs, opts)));
      }
    } catch (err) {
      warn({ err }, 'R1: finding own Leases failed');
      result.failed.push(`finding own Leases: ${(err as Error).message}`);
    }
    // kopf's entries under this pod's UID, removed as kopf's clean exit would (docs/design.md#kopf-peering-entries)
    const identity = kopfIdentity(pod as Pod).identity;
    for (const scope of identity ? peeringScopes : []) {
      const entries = this.#ownPeerEntries(scope, identity as string, opts).then(
        (found) =>
          Promise.all(found.map((p) => one(scope.kind, p.metadata?.name as string, () => releaseOwnPeerEntry(client, ns, scope, p, identity as string, opts)))),
        (err: unknown) => {
          warn({ err, kind: scope.kind }, `R1: finding own ${scope.kind} entries failed`);
          result.failed.push(`finding own ${scope.kind} entries: ${(err as Error).message}`);
        },
      );
      work.push(entries.then(() => {}));
    }
    await Promise.all(work);
  }

  /**
   * The peering objects of `scope` with an entry under `identity`. None when
   * kopf's CRD is not installed, or the hook may not list them (the cluster
   * scope's ClusterRole is opt-in): then the entry stays, as without the hook.
   */
  async #ownPeerEntries(scope: PeeringScope, identity: string, opts: { signal: AbortSignal; timeoutMs: number }): Promise<KopfPeering[]> {
    const { log, ns } = this.#ctx;
    try {
      const list = await this.#client.listKopfPeerings(peeringNamespace(scope, ns), opts);
      return list.items.filter((p) => hasPeerEntry(p, identity));
    } catch (err) {
      if (!isNotFound(err) && !isForbidden(err)) throw err;
      const why = isNotFound(err) ? `kopf's ${scope.kind} resource is not installed` : `the hook may not list ${scope.kind} objects`;
      log.info({ rule: 'R1', kind: scope.kind, identity }, `R1: no ${scope.kind} entry released: ${why}`);
      return [];
    }
  }

  /** The namespace's pods, read live; undefined when the hook may not list them. */
  async #listPods(opts: { signal: AbortSignal; timeoutMs: number }): Promise<Pod[] | undefined> {
    const ctx = this.#ctx;
    if (!allowed(ctx, 'pods', 'list')) return undefined;
    return (await this.#client.listPods(ctx.ns, opts)).items;
  }

  /** An Event on this pod for each lock released or, observing, that would have been. */
  async recordEvents(result: TerminateResult, signal: AbortSignal): Promise<void> {
    const { self } = this.#ctx;
    const why = result.decision.message;
    await Promise.all([
      ...result.released.map((id) => this.#events.emit(self, 'LeaderLockReleased', 'Normal', `Released leader lock ${id} (R1: ${why})`, signal)),
      ...result.observed.map((id) =>
        this.#events.emit(self, 'LeaderLockWouldRelease', 'Normal', `Would release leader lock ${id} (R1: ${why}); observe mode`, signal),
      ),
    ]);
  }
}
