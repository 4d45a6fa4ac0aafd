/**
 * A store of lock candidates of one kind, as a client-go informer's store
 * keeps them, indexed by owner UID and told to its handlers
 * (docs/design.md#what-counts-as-a-lock). The ConfigMap watch feeds one
 * (lock-cache.ts), the Lease watch another (held-leases.ts): each handler
 * keeps its own state, and neither handler calls the other.
 */
import type { OwnerReference } from '../kube/types.ts';
import type { LockObject } from './lock-kinds.ts';

/** A part of the hook that follows the lock candidates, like an informer's event handler. */
export interface LockHandler {
  /** A lock candidate: an object (metadata, or a full object read live) with a single Pod owner, not on its way out. */
  upsert(obj: LockObject, owner: OwnerReference): void;
  /** The object is gone, on its way out, or no lock candidate any more. */
  remove(name: string): void;
}

/** What a handler may ask of the store: to be told of every change, and to take in what a live read found. */
export interface LockSource {
  subscribe(handler: LockHandler): void;
  /** A live read saw a newer version than the watch delivered: every handler sorts it again. */
  put(obj: LockObject): void;
}

export class LockStore implements LockSource {
  readonly #candidateOwner: (obj: LockObject) => OwnerReference | undefined;
  readonly #handlers: LockHandler[] = [];
  readonly #ownerUidByName = new Map<string, string>();
  readonly #namesByOwnerUid = new Map<string, Set<string>>();

  /** `candidateOwner`: the single Pod owner that makes an object a candidate of this kind. */
  constructor(candidateOwner: (obj: LockObject) => OwnerReference | undefined) {
    this.#candidateOwner = candidateOwner;
  }

  subscribe(handler: LockHandler): void {
    this.#handlers.push(handler);
  }

  /** The names of the lock candidates owned by `uid`, as the watch last saw them. */
  ownedBy(uid: string): string[] {
    return [...(this.#namesByOwnerUid.get(uid) ?? [])];
  }

  put(obj: LockObject): void {
    const name = obj.metadata?.name as string;
    const owner = this.#candidateOwner(obj);
    // A lock already marked for deletion (by GC, a foreground delete) is on
    // its way out; deleting it again would change nothing.
    if (!owner || obj.metadata?.deletionTimestamp) {
      this.remove(name);
      return;
    }
    this.#unindex(name);
    this.#ownerUidByName.set(name, owner.uid);
    const names = this.#namesByOwnerUid.get(owner.uid) ?? new Set<string>();
    this.#namesByOwnerUid.set(owner.uid, names.add(name));
    for (const handler of this.#handlers) handler.upsert(obj, owner);
  }

  remove(name: string): void {
    this.#unindex(name);
    for (const handler of this.#handlers) handler.remove(name);
  }

  /** A (re)list: every object listed is put, every candidate not listed any more is removed. */
  replace(items: LockObject[]): void {
    const seen = new Set<string>();
    for (const obj of items) {
      const name = obj.metadata?.name;
      if (!name) continue;
      seen.add(name);
      this.put(obj);
    }
    for (const name of [...this.#ownerUidByName.keys()]) if (!seen.has(name)) this.remove(name);
  }

  /** A watch event. */
  apply(type: string, obj: LockObject): void {
    const name = obj.metadata?.name;
    if (!name) return;
    if (type === 'DELETED') this.remove(name);
    else this.put(obj);
  }

  #unindex(name: string): void {
    const uid = this.#ownerUidByName.get(name);
    if (uid === undefined) return;
    this.#ownerUidByName.delete(name);
    const names = this.#namesByOwnerUid.get(uid);
    names?.delete(name);
    if (names?.size === 0) this.#namesByOwnerUid.delete(uid);
  }
}
