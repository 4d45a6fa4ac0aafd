/**
 * The Leases of this pod, known ahead of SIGTERM so R1 needs no list then:
 * one list-watch of the namespace's Leases (whole objects), of which this
 * pod's are kept — those it holds by identity
 * (docs/design.md#leases-r1-only) and those it owns by
 * ownerReference (docs/design.md#leases-owned-by-a-pod). The same watch
 * feeds the store of Leases owned by any pod, which R0, R2 and R3 handle
 * like ConfigMap locks.
 */
import { paths } from '../kube/client.ts';
import type { Lease } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, type HookContext } from './context.ts';
import type { LockObject } from './lock-kinds.ts';
import { LockStore } from './lock-store.ts';
import { isOwnLease, leaseLockOwner } from './rules.ts';

/** This pod's Leases: held by identity (given the leaderless record) and owned by its UID (deleted). */
export interface OwnLeases {
  byIdentity: Lease[];
  byOwner: Lease[];
}

/** Sorts Leases into this pod's; an owned Lease is never also held by identity (isOwnLease). */
export function ownLeases(items: Lease[], self: { podName: string; podUid: string }): OwnLeases {
  return {
    byIdentity: items.filter((l) => isOwnLease(l, self.podName)),
    byOwner: items.filter((l) => leaseLockOwner(l)?.uid === self.podUid && !l.metadata?.deletionTimestamp),
  };
}

export class HeldLeases {
  readonly #ctx: HookContext;
  readonly #leases = new Map<string, Lease>();
  /** The Leases owned by a pod, as lock candidates (R0, R2, R3 handle those of other pods). */
  readonly locks = new LockStore((obj: LockObject) => leaseLockOwner(obj as Lease));
  #watch: Watcher | undefined;

  constructor(ctx: HookContext) {
    this.#ctx = ctx;
  }

  /** This pod's Leases; undefined unless the watch has listed and is connected. */
  current(): OwnLeases | undefined {
    return this.#watch?.synced && this.#watch.healthy ? ownLeases([...this.#leases.values()], this.#ctx) : undefined;
  }

  /** Their names as the watch last saw them, for the start's log line. */
  names(): string[] {
    return [...this.#leases.keys()];
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
    const mine = (lease: Lease) => {
      const own = ownLeases([lease], ctx);
      return own.byIdentity.length + own.byOwner.length > 0;
    };
    this.#watch = startWatch<Lease>(
      { client: ctx.client, path: paths.leases(ctx.ns), mode: 'list-watch', what: 'Leases', logger: ctx.log },
      {
        onList: (items) => {
          this.#leases.clear();
          for (const lease of items) if (mine(lease) && lease.metadata?.name) this.#leases.set(lease.metadata.name, lease);
          this.locks.replace(items);
          listed();
        },
        onEvent: (type, lease) => {
          const name = lease.metadata?.name;
          if (!name) return;
          if (type !== 'DELETED' && mine(lease)) this.#leases.set(name, lease);
          else this.#leases.delete(name);
          this.locks.apply(type, lease);
        },
        onHealth: (up) => ctx.metrics.watchUp('leases', up),
      },
    );
  }
}
