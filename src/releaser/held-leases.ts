/**
 * The Leases of this pod, known ahead of SIGTERM so R1 needs no list then:
 * one list-watch of the namespace's Leases (whole objects), all kept, since
 * which of them this pod holds by identity is decided at SIGTERM with its live
 * pod (docs/design.md#leases-held-by-identity); those it owns by
 * ownerReference (docs/design.md#leases-owned-by-a-pod) are known at once.
 * The same watch feeds the store of Leases owned by any pod, which R0, R2 and
 * R3 handle like ConfigMap locks.
 */
import { paths } from '../kube/client.ts';
import type { Lease } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, type HookContext } from './context.ts';
import { heldByName } from './lease-identity.ts';
import type { LockObject } from './lock-kinds.ts';
import { LockStore } from './lock-store.ts';
import { leaseLockOwner } from './rules.ts';

/** This pod's Leases: held by identity (given the leaderless record once proven its) and owned by its UID (deleted). */
export interface OwnLeases {
  byIdentity: Lease[];
  byOwner: Lease[];
}

/**
 * Sorts Leases into this pod's: held by one of `names` (lease-identity.ts),
 * or owned by `podUid`. An owned Lease is never also held by identity.
 */
export function ownLeases(items: readonly Lease[], self: { podUid: string; names: readonly string[] }): OwnLeases {
  return {
    byIdentity: items.filter((l) => heldByName(l, self.names)),
    byOwner: items.filter((l) => ownedBy(l, self.podUid)),
  };
}

function ownedBy(lease: Lease, podUid: string): boolean {
  return leaseLockOwner(lease)?.uid === podUid && !lease.metadata?.deletionTimestamp;
}

/** Another part that follows every Lease of the namespace (identity-leases.ts). */
export interface LeaseListener {
  replace(items: readonly Lease[]): void;
  upsert(lease: Lease): void;
  remove(name: string): void;
}

export class HeldLeases {
  readonly #ctx: HookContext;
  readonly #leases = new Map<string, Lease>();
  readonly #listeners: LeaseListener[] = [];
  /** The Leases owned by a pod, as lock candidates (R0, R2, R3 handle those of other pods). */
  readonly locks = new LockStore((obj: LockObject) => leaseLockOwner(obj as Lease));
  #watch: Watcher | undefined;

  constructor(ctx: HookContext) {
    this.#ctx = ctx;
  }

  /** Every Lease of the namespace; undefined unless the watch has listed and is connected. */
  current(): Lease[] | undefined {
    return this.#watch?.synced && this.#watch.healthy ? [...this.#leases.values()] : undefined;
  }

  /** Whether this pod owns a Lease, as the connected watch sees them. */
  ownsOne(): boolean {
    return this.current()?.some((l) => ownedBy(l, this.#ctx.podUid)) ?? false;
  }

  /** The Leases held as this pod's name or owned by it, as the watch last saw them, for the start's log line. */
  names(): string[] {
    const own = ownLeases([...this.#leases.values()], { podUid: this.#ctx.podUid, names: [this.#ctx.podName] });
    return [...own.byIdentity, ...own.byOwner].map((l) => l.metadata?.name as string);
  }

  /** `listener` hears of every Lease from the next list on. */
  subscribe(listener: LeaseListener): void {
    this.#listeners.push(listener);
  }

  /** Starts the watch; resolves once it has listed (at once when the hook may not list and watch Leases). */
  start(): Promise<void> {
    return new Promise<void>((resolve) => this.#watchLeases(resolve));
  }

  stop(): void {
    this.#watch?.stop();
  }

  /** Settles when the watch loop has ended after stop(). */
  get done(): Promise<void> {
    return this.#watch?.done ?? Promise.resolve();
  }

  #watchLeases(listed: () => void): void {
    const ctx = this.#ctx;
    if (!allowed(ctx, 'leases', 'list') || !allowed(ctx, 'leases', 'watch')) {
      listed();
      return;
    }
    this.#watch = startWatch<Lease>(
      { client: ctx.client, path: paths.leases(ctx.ns), mode: 'list-watch', what: 'Leases', logger: ctx.log },
      {
        onList: (items) => {
          this.#leases.clear();
          for (const lease of items) if (lease.metadata?.name) this.#leases.set(lease.metadata.name, lease);
          this.locks.replace(items);
          for (const l of this.#listeners) l.replace(items);
          listed();
        },
        onEvent: (type, lease) => {
          const name = lease.metadata?.name;
          if (!name) return;
          if (type !== 'DELETED') this.#leases.set(name, lease);
          else this.#leases.delete(name);
          this.locks.apply(type, lease);
          for (const l of this.#listeners) {
            if (type === 'DELETED') l.remove(name);
            else l.upsert(lease);
          }
        },
        onHealth: (up) => ctx.metrics.watchUp('leases', up),
      },
    );
  }
}
