/**
 * The namespace's ConfigMap locks as a client-go informer keeps them: one
 * metadata-only list-watch feeds a store of lock candidates indexed by owner
 * UID (docs/design.md#what-counts-as-a-lock). The own and the foreign locks
 * are its handlers, each with its own state; neither calls the other.
 */
import { metadataAccept, paths } from '../kube/client.ts';
import type { ConfigMap, OwnerReference } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, type HookContext } from './context.ts';
import { lockCandidateOwner } from './rules.ts';

/** A part of the hook that follows the lock candidates, like an informer's event handler. */
export interface LockHandler {
  /** A lock candidate: a ConfigMap (metadata, or a full object read live) with a single Pod owner, not on its way out. */
  upsert(cm: ConfigMap, owner: OwnerReference): void;
  /** The ConfigMap is gone, on its way out, or no lock candidate any more. */
  remove(name: string): void;
}

/** What a handler may ask of the cache: to be told of every change, and to take in what a live read found. */
export interface LockSource {
  subscribe(handler: LockHandler): void;
  /** A live read saw a newer version than the watch delivered: every handler sorts it again. */
  put(cm: ConfigMap): void;
}

export class LockCache implements LockSource {
  readonly #ctx: HookContext;
  readonly #handlers: LockHandler[] = [];
  readonly #ownerUidByName = new Map<string, string>();
  readonly #namesByOwnerUid = new Map<string, Set<string>>();
  /** The pinned lock name (the option, then at start the annotation, else the option); undefined when discovering. */
  #lockName: string | undefined;
  #lockWatch: Watcher | undefined;

  constructor(ctx: HookContext, pinnedLockName: string | undefined) {
    this.#ctx = ctx;
    this.#lockName = pinnedLockName;
  }

  subscribe(handler: LockHandler): void {
    this.#handlers.push(handler);
  }

  get lockName(): string | undefined {
    return this.#lockName;
  }

  /** The names of the lock candidates owned by `uid`, as the watch last saw them. */
  ownedBy(uid: string): string[] {
    return [...(this.#namesByOwnerUid.get(uid) ?? [])];
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

  put(cm: ConfigMap): void {
    const name = cm.metadata?.name as string;
    const owner = lockCandidateOwner(cm);
    // A lock already marked for deletion (by GC, a foreground delete) is on
    // its way out; deleting it again would change nothing.
    if (!owner || cm.metadata?.deletionTimestamp) {
      this.#remove(name);
      return;
    }
    this.#unindex(name);
    this.#ownerUidByName.set(name, owner.uid);
    const names = this.#namesByOwnerUid.get(owner.uid) ?? new Set<string>();
    this.#namesByOwnerUid.set(owner.uid, names.add(name));
    for (const handler of this.#handlers) handler.upsert(cm, owner);
  }

  #remove(name: string): void {
    this.#unindex(name);
    for (const handler of this.#handlers) handler.remove(name);
  }

  #unindex(name: string): void {
    const uid = this.#ownerUidByName.get(name);
    if (uid === undefined) return;
    this.#ownerUidByName.delete(name);
    const names = this.#namesByOwnerUid.get(uid);
    names?.delete(name);
    if (names?.size === 0) this.#namesByOwnerUid.delete(uid);
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
          const seen = new Set<string>();
          for (const cm of items) {
            const name = cm.metadata?.name;
            if (!name) continue;
            seen.add(name);
            this.put(cm);
          }
          for (const name of [...this.#ownerUidByName.keys()]) if (!seen.has(name)) this.#remove(name);
          listed();
        },
        onEvent: (type, cm) => {
          const name = cm.metadata?.name;
          if (!name) return;
          if (type === 'DELETED') this.#remove(name);
          else this.put(cm);
        },
        onHealth: (up) => ctx.metrics.watchUp('configmaps', up),
      },
    );
  }
}
