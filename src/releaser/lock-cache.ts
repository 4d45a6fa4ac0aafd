/**
 * The hook's one view of the namespace's ConfigMap locks, kept the way a
 * client-go informer keeps its cache: one metadata-only list-watch of the
 * ConfigMaps feeds a store of lock candidates indexed by their owner's UID
 * (docs/design.md#what-counts-as-a-lock). The own locks and the locks of
 * other pods are handlers of this cache; each keeps its own state, and none
 * calls the other. held-leases.ts is its counterpart for Leases.
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
  /** Lock candidate name → its owner's UID. */
  readonly #ownerOf = new Map<string, string>();
  /** Owner UID → the names of its lock candidates. */
  readonly #byOwner = new Map<string, Set<string>>();
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
    return [...(this.#byOwner.get(uid) ?? [])];
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
    this.#ownerOf.set(name, owner.uid);
    const names = this.#byOwner.get(owner.uid) ?? new Set<string>();
    this.#byOwner.set(owner.uid, names.add(name));
    for (const handler of this.#handlers) handler.upsert(cm, owner);
  }

  #remove(name: string): void {
    this.#unindex(name);
    for (const handler of this.#handlers) handler.remove(name);
  }

  #unindex(name: string): void {
    const uid = this.#ownerOf.get(name);
    if (uid === undefined) return;
    this.#ownerOf.delete(name);
    const names = this.#byOwner.get(uid);
    names?.delete(name);
    if (names?.size === 0) this.#byOwner.delete(uid);
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
          for (const name of [...this.#ownerOf.keys()]) if (!seen.has(name)) this.#remove(name);
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
