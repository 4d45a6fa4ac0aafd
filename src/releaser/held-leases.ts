/**
 * The Leases this pod holds, known ahead of SIGTERM so R1 needs no list then
 * (docs/design.md#leases-r1-only): one list-watch of the namespace's Leases,
 * of which only this pod's are kept.
 */
import { paths } from '../kube/client.ts';
import type { Lease } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, type HookContext } from './context.ts';
import { isOwnLease } from './rules.ts';

export class HeldLeases {
  readonly #ctx: HookContext;
  readonly #leases = new Map<string, Lease>();
  #watch: Watcher | undefined;

  constructor(ctx: HookContext) {
    this.#ctx = ctx;
  }

  /** The Leases this pod holds; undefined unless the watch has listed and is connected. */
  current(): Lease[] | undefined {
    return this.#watch?.synced && this.#watch.healthy ? [...this.#leases.values()] : undefined;
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
    const held = (lease: Lease) => isOwnLease(lease, ctx.podName);
    this.#watch = startWatch<Lease>(
      { client: ctx.client, path: paths.leases(ctx.ns), mode: 'list-watch', what: 'Leases', logger: ctx.log },
      {
        onList: (items) => {
          this.#leases.clear();
          for (const lease of items) if (held(lease) && lease.metadata?.name) this.#leases.set(lease.metadata.name, lease);
          listed();
        },
        onEvent: (type, lease) => {
          const name = lease.metadata?.name;
          if (!name) return;
          if (type !== 'DELETED' && held(lease)) this.#leases.set(name, lease);
          else this.#leases.delete(name);
        },
        onHealth: (up) => ctx.metrics.watchUp('leases', up),
      },
    );
  }
}
