/**
 * Leases that other pods hold by identity: R2 from this pod's hook
 * (docs/design.md#r2-for-leases-held-by-identity). Fed by the Lease watch; a
 * Lease is looked at when its holder changes, not on every renewal, and
 * again whenever a pod that could be its holder changes. Each look reads the
 * Lease live, then the pod of the identity's name (while it runs, that
 * settles it), else the namespace's pods, and writes the leaderless record
 * over exactly the version read, only when every pod that could hold it has
 * finished. Never R3: a holder that is gone may be a pod of another namespace,
 * and its Lease expires by itself.
 */
import type { KubeClient } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import type { Lease, Pod } from '../kube/types.ts';
import { allowed, backgroundRequest, type ContextWithoutClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import { ForeignRelease } from './foreign-release.ts';
import { HolderWatches, type WatchPodByName } from './holder-watches.ts';
import { decideIdentityHolderRelease, heldByName, identityHost, isPodName, leaseExpired, namedPodHoldsOn } from './lease-identity.ts';
import { BackoffRetry } from './retry.ts';
import { releasedLease } from './rules.ts';
import { KeyedSerializer } from './serializer.ts';

/** What R2 for a Lease held by identity asks of the API. */
export type IdentityLeaseClient = Pick<KubeClient, 'getLease' | 'updateLease' | 'listPods' | 'getPod'>;

export interface IdentityLeaseSources {
  client: IdentityLeaseClient;
  events: EventRecorder;
  watchPod: WatchPodByName;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  observe: boolean;
}

/** A Lease of another holder, as last looked at. */
interface TrackedLease {
  readonly holder: string;
  /** The pods that could be its holder at the last look, watched by name. */
  carriers: Set<string>;
  readonly retry: BackoffRetry;
}

export class IdentityLeases {
  readonly #ctx: ContextWithoutClient;
  readonly #client: IdentityLeaseClient;
  readonly #writer: ForeignRelease;
  readonly #tracked = new Map<string, TrackedLease>();
  readonly #carriers: HolderWatches;
  readonly #passes = new KeyedSerializer<string>();

  constructor(ctx: ContextWithoutClient, sources: IdentityLeaseSources) {
    this.#ctx = ctx;
    this.#client = sources.client;
    this.#writer = new ForeignRelease(ctx, sources.client, sources.events, { observe: sources.observe });
    this.#carriers = new HolderWatches(ctx, sources.watchPod, (podName) => {
      for (const [name, t] of this.#tracked) if (t.carriers.has(podName)) void this.evaluate(name);
    });
  }

  /** The Lease watch listed: every Lease as it is now. */
  replace(items: readonly Lease[]): void {
    const names = new Set(items.map((l) => l.metadata?.name));
    for (const name of [...this.#tracked.keys()]) if (!names.has(name)) this.remove(name);
    for (const lease of items) this.upsert(lease);
  }

  /** A Lease added or changed; a new version of the same holder's Lease (a renewal) says nothing of the holder. */
  upsert(lease: Lease): void {
    const name = lease.metadata?.name;
    if (!name) return;
    const holder = lease.spec?.holderIdentity ?? '';
    if (!this.#isOthers(lease)) {
      this.remove(name);
      return;
    }
    if (this.#tracked.get(name)?.holder === holder) return;
    this.remove(name);
    this.#tracked.set(name, { holder, carriers: new Set(), retry: new BackoffRetry(() => void this.evaluate(name)) });
    void this.evaluate(name);
  }

  remove(name: string): void {
    const t = this.#tracked.get(name);
    if (!t) return;
    t.retry.cancel();
    this.#tracked.delete(name);
    this.#watchCarriers(t, new Set());
  }

  /** Looks at the Lease once more (one look at a time per Lease). */
  evaluate(name: string): Promise<void> {
    return this.#passes.run(name, () => this.#evaluateOnce(name));
  }

  stop(): void {
    this.#carriers.stop();
    for (const t of this.#tracked.values()) t.retry.cancel();
  }

  /** Settles when the carrier watches have ended after stop(). */
  get done(): Promise<unknown> {
    return this.#carriers.done;
  }

  /** Held by an identity (no pod owner, no strategy), and not this pod's name: another pod's, as far as the watch says. */
  #isOthers(lease: Lease): boolean {
    const holder = lease.spec?.holderIdentity;
    return !!holder && heldByName(lease, [identityHost(holder)]) && identityHost(holder) !== this.#ctx.podName;
  }

  async #evaluateOnce(name: string): Promise<boolean> {
    const ctx = this.#ctx;
    const t = this.#tracked.get(name);
    if (!t || ctx.signal.aborted || !allowed(ctx, 'pods', 'list')) return false;
    const id = `Lease/${name}`;
    let lease: Lease;
    let pods: Pod[];
    try {
      lease = await this.#client.getLease(ctx.ns, name, backgroundRequest(ctx));
      // the Lease's version first: a pod that took it since is in the list
      if (lease.spec?.holderIdentity !== t.holder || leaseExpired(lease, ctx.clock.now())) return true;
      // the pod of the identity's name alone first: while it runs, a list of every pod proves nothing more
      const named = await this.#namedPod(identityHost(t.holder));
      if (namedPodHoldsOn(named)) {
        if (ctx.signal.aborted || this.#tracked.get(name) !== t) return !ctx.signal.aborted;
        t.retry.succeeded();
        this.#watchCarriers(t, new Set([named.metadata?.name as string]));
        if (ctx.log.isLevelEnabled('debug'))
          ctx.log.debug({ rule: 'R2', lock: id, holder: t.holder }, `holder may be pod ${named.metadata?.name}, not finished; Lease kept`);
        return true;
      }
      pods = (await this.#client.listPods(ctx.ns, backgroundRequest(ctx))).items;
    } catch (err) {
      if (isNotFound(err)) this.remove(name);
      else if (!ctx.signal.aborted && this.#tracked.get(name) === t) {
        ctx.log.warn({ err, lock: id }, 'cannot read a Lease held by identity or the pods that could hold it; will retry');
        t.retry.schedule();
        return false;
      }
      // gone, or replaced by a new holder's meanwhile: the pass asked for it runs next
      return !ctx.signal.aborted && this.#tracked.has(name);
    }
    // replaced by a new holder's meanwhile: the pass asked for it runs next
    if (ctx.signal.aborted || this.#tracked.get(name) !== t) return !ctx.signal.aborted;
    t.retry.succeeded();
    const decision = decideIdentityHolderRelease(lease, pods);
    const carriers = decision.release ? decision.holders : decision.carriers;
    this.#watchCarriers(t, new Set(carriers.map((p) => p.metadata?.name as string)));
    if (!decision.release) {
      if (ctx.log.isLevelEnabled('debug')) ctx.log.debug({ rule: 'R2', lock: id, holder: t.holder }, `${decision.message}; Lease kept`);
      return true;
    }
    await this.#release(lease, decision.holders[0] as Pod, decision.message, t);
    return true;
  }

  /** The pod named `host`, or undefined when there is none or no pod can have that name. */
  async #namedPod(host: string): Promise<Pod | undefined> {
    if (!isPodName(host)) return undefined;
    try {
      return await this.#client.getPod(this.#ctx.ns, host, backgroundRequest(this.#ctx));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Watches exactly `names` for `t`, and stops the watches no tracked Lease needs any more. */
  #watchCarriers(t: TrackedLease, names: Set<string>): void {
    const dropped = [...t.carriers].filter((n) => !names.has(n));
    t.carriers = names;
    for (const n of names) this.#carriers.watch(n);
    for (const n of dropped) if (![...this.#tracked.values()].some((o) => o.carriers.has(n))) this.#carriers.unwatch(n);
  }

  /** The leaderless record over exactly the version read, written by the one release writer. */
  async #release(lease: Lease, holderPod: Pod, why: string, t: TrackedLease): Promise<void> {
    const ctx = this.#ctx;
    const name = lease.metadata?.name as string;
    const podName = holderPod.metadata?.name as string;
    const outcome = await this.#writer.release(
      {
        kind: 'Lease',
        name,
        holderPod: { name: podName, uid: holderPod.metadata?.uid as string },
        holderFields: { holder: t.holder, holderPod: podName },
        version: `${lease.metadata?.uid}/${lease.metadata?.resourceVersion}`,
        tracker: t,
        isCurrent: () => this.#tracked.get(name) === t,
        write: (opts) => this.#client.updateLease(ctx.ns, releasedLease(lease, ctx.clock.now()), opts),
      },
      'R2',
      why,
    );
    if (outcome === 'retry') t.retry.schedule();
  }
}
