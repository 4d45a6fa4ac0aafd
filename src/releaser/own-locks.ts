/**
 * This pod's own locks, known ahead of SIGTERM so R1 needs few requests
 * (docs/design.md#r1-own-stop): a handler of the lock cache that keeps the
 * candidates this pod owns, each read in full once, and, with the Leases this
 * pod holds, hands them to the SIGTERM path.
 */
import { isNotFound } from '../kube/errors.ts';
import type { ConfigMap, Lease, OwnerReference } from '../kube/types.ts';
import { allowed, backgroundRequest, type ContextWithoutClient, type OwnLockClient } from './context.ts';
import type { HeldLeases } from './held-leases.ts';
import type { LockCache, LockHandler } from './lock-cache.ts';
import type { LockObject } from './lock-kinds.ts';
import { lockCandidateOwner, lockOwner } from './rules.ts';
import type { OwnCandidates } from './terminate.ts';

/**
 * A ConfigMap of this pod that may be a lock: `verified` is the last full
 * version read live that is a lock of this pod (no data), whose uid and
 * resourceVersion guard the delete; unset until that read succeeds.
 */
interface OwnLock {
  verified?: ConfigMap;
}

export interface OwnLockSources {
  client: OwnLockClient;
  cache: Pick<LockCache, 'subscribe' | 'lockName' | 'locksLive'>;
  leases: Pick<HeldLeases, 'current' | 'ownsOne' | 'names'>;
  releaseTimeoutMs: number;
}

export class OwnLocks implements OwnCandidates, LockHandler {
  readonly #ctx: ContextWithoutClient;
  readonly #client: OwnLockClient;
  readonly #cache: OwnLockSources['cache'];
  readonly #leases: OwnLockSources['leases'];
  readonly #releaseTimeoutMs: number;
  readonly #locks = new Map<string, OwnLock>();

  constructor(ctx: ContextWithoutClient, sources: OwnLockSources) {
    this.#ctx = ctx;
    this.#client = sources.client;
    this.#cache = sources.cache;
    this.#leases = sources.leases;
    this.#releaseTimeoutMs = sources.releaseTimeoutMs;
    sources.cache.subscribe(this);
  }

  /** The pinned lock name; undefined when discovering. */
  get lockName(): string | undefined {
    return this.#cache.lockName;
  }

  /** Whether this pod holds a lock (candidate) of its own, a ConfigMap or an owned Lease: then it waits for no other. */
  get holdsLock(): boolean {
    return this.#locks.size > 0 || this.#leases.ownsOne();
  }

  /** Names of the own ConfigMap locks and Leases known now, for the start's log line. */
  get known(): { locks: string[]; leases: string[] } {
    return { locks: [...this.#locks.keys()], leases: this.#leases.names() };
  }

  upsert(obj: LockObject, owner: OwnerReference): void {
    const cm = obj as ConfigMap;
    const name = cm.metadata?.name as string;
    if (owner.uid !== this.#ctx.podUid) {
      this.#locks.delete(name);
      return;
    }
    const known = this.#locks.get(name);
    if (known?.verified && known.verified.metadata?.resourceVersion === cm.metadata?.resourceVersion) return;
    const entry: OwnLock = known?.verified ? { verified: known.verified } : {};
    this.#locks.set(name, entry);
    void this.#verify(name, entry);
  }

  remove(name: string): void {
    this.#locks.delete(name);
  }

  /**
   * Reads an own candidate in full ahead of SIGTERM, so R1 can delete it at
   * once with preconditions of a version known to carry no data. A candidate
   * with data is the pod's own configuration: it stops being a candidate.
   */
  async #verify(name: string, entry: OwnLock): Promise<void> {
    const ctx = this.#ctx;
    let full: ConfigMap;
    try {
      full = await this.#client.getConfigMap(ctx.ns, name, backgroundRequest(ctx));
    } catch (err) {
      // the watch brings the delete; SIGTERM reads an unverified candidate itself
      if (!ctx.signal.aborted && !isNotFound(err)) ctx.log.debug({ err, lock: `ConfigMap/${name}` }, 'cannot read own lock yet; SIGTERM will read it');
      return;
    }
    if (this.#locks.get(name) !== entry) return;
    const owner = lockOwner(full);
    if (owner?.uid === ctx.podUid) entry.verified = full;
    else if (!owner && lockCandidateOwner(full)?.uid === ctx.podUid) {
      this.#locks.delete(name);
      ctx.log.debug({ lock: `ConfigMap/${name}` }, 'own ConfigMap carries data: not a lock, left to garbage collection');
    }
  }

  /**
   * The own locks, in full. From the watch's cache when it is connected: a
   * candidate already read in full is used as is (no request); one that is
   * not yet is read now, in parallel with the own pod. Only when the watch is
   * down does the SIGTERM path look for them: the pinned lock by name, else
   * a metadata list of the namespace's ConfigMaps.
   */
  async locks(signal: AbortSignal): Promise<ConfigMap[]> {
    const { ns, podUid } = this.#ctx;
    const client = this.#client;
    const opts = { signal, timeoutMs: this.#releaseTimeoutMs };
    const mine = (cm: ConfigMap | undefined): cm is ConfigMap => lockOwner(cm)?.uid === podUid;
    const readMine = (name: string) =>
      client.getConfigMap(ns, name, opts).then(
        (cm) => (mine(cm) ? cm : undefined),
        (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
      );
    let names: string[];
    const known: ConfigMap[] = [];
    if (this.#cache.locksLive) {
      names = [];
      for (const [name, entry] of this.#locks) {
        if (entry.verified) known.push(entry.verified);
        else names.push(name);
      }
    } else if (this.#cache.lockName) {
      names = [this.#cache.lockName];
    } else {
      const list = await client.listConfigMapsMetadata(ns, opts);
      names = list.items.filter((cm) => lockCandidateOwner(cm)?.uid === podUid).map((cm) => cm.metadata?.name as string);
    }
    const read = await Promise.all(names.map(readMine));
    return [...known, ...read.filter(mine)];
  }

  /**
   * Every Lease of the namespace, for R1 to sort out its own with the live
   * pod: the watch's when it is connected, else one list (when the hook may
   * list them).
   */
  async leases(signal: AbortSignal): Promise<Lease[]> {
    const ctx = this.#ctx;
    const held = this.#leases.current();
    if (held) return held;
    if (!allowed(ctx, 'leases', 'list')) return [];
    const list = await this.#client.listLeases(ctx.ns, { signal, timeoutMs: this.#releaseTimeoutMs });
    return list.items;
  }
}
