/**
 * The namespace's ConfigMap locks as a client-go informer keeps them: one
 * metadata-only list-watch feeds a store of lock candidates indexed by owner
 * UID (docs/design.md#what-counts-as-a-lock). The own and the foreign locks
 * are its handlers, each with its own state; neither calls the other.
 */
import { metadataAccept, paths } from '../kube/client.ts';
import type { ConfigMap } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, type HookContext } from './context.ts';
import { LockStore } from './lock-store.ts';
import { lockCandidateOwner } from './rules.ts';

export type { LockHandler, LockSource } from './lock-store.ts';

export class LockCache extends LockStore {
  readonly #ctx: HookContext;
  /** The pinned lock name (the option, then at start the annotation, else the option); undefined when discovering. */
  #lockName: string | undefined;
  #lockWatch: Watcher | undefined;

  constructor(ctx: HookContext, pinnedLockName: string | undefined) {
    super(lockCandidateOwner);
    this.#ctx = ctx;
    this.#lockName = pinnedLockName;
  }

  get lockName(): string | undefined {
    return this.#lockName;
  }

  /** Whether the ConfigMap watch has listed and is connected: only then is the store complete. */
  get locksLive(): boolean {
    return this.#lockWatch?.synced === true && this.#lockWatch.healthy;
  }

  /**
   * Starts the watch, for `lockName` only when it is pinned. Resolves once
   * it has listed (at once when the hook may not list and watch ConfigMaps).
   */
  start(lockName: string | undefined): Promise<void> {
    this.#lockName = lockName;
    return new Promise<void>((resolve) => this.#watchLocks(resolve));
  }

  stop(): void {
    this.#lockWatch?.stop();
  }

  /** Settles when the watch loop has ended after stop(). */
  get done(): Promise<void> {
    return this.#lockWatch?.done ?? Promise.resolve();
  }

  #watchLocks(listed: () => void): void {
    const ctx = this.#ctx;
    if (!allowed(ctx, 'configmaps', 'list') || !allowed(ctx, 'configmaps', 'watch')) {
      listed();
      return;
    }
    const lockName = this.#lockName;
    this.#lockWatch = startWatch<ConfigMap>(
      {
        client: ctx.client,
        path: paths.configMaps(ctx.ns),
        ...(lockName ? { fieldSelector: `metadata.name=${lockName}` } : {}),
        mode: 'list-watch',
        // Names and owners are all discovery needs; the data of every
        // ConfigMap of the namespace would make the hook grow with it.
        accept: metadataAccept,
        keep: (cm) => lockCandidateOwner(cm) !== undefined,
        what: lockName ? `ConfigMap lock ${lockName}` : 'ConfigMap locks',
        logger: ctx.log,
      },
      {
        onList: (items) => {
          this.replace(items);
          listed();
        },
        onEvent: (type, cm) => this.apply(type, cm),
        onHealth: (up) => ctx.metrics.watchUp('configmaps', up),
      },
    );
  }
}
