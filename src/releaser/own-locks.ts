/**
 * This pod's own locks, known ahead of SIGTERM so R1 needs few requests: the
 * ConfigMap locks (from a metadata-only watch of the namespace's ConfigMaps,
 * each candidate then read in full once) and the Leases (from a Lease
 * watch). The ConfigMap watch also sees the locks of other pods; it hands
 * them to the ForeignLockSink, which tracks their holders.
 */
import { metadataAccept, paths } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
import type { ConfigMap, Lease, OwnerReference } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, backgroundRequest, type HookContext } from './context.ts';
import { isOwnLease, lockCandidateOwner, lockOwner } from './rules.ts';
import type { OwnCandidates } from './terminate.ts';

/** Where the ConfigMaps that may be locks of other pods go. */
export interface ForeignLockSink {
  /** A ConfigMap (metadata only) whose single Pod owner is another pod. */
  track(cm: ConfigMap, owner: OwnerReference): void;
  /** The ConfigMap is gone, on its way out, or no lock of another pod any more. */
  forget(name: string): void;
  /** The names it tracks, so a relist drops those that are gone. */
  names(): string[];
}

/**
 * A ConfigMap of this pod that may be a lock: `verified` is the last full
 * version read live that is a lock of this pod (no data), whose uid and
 * resourceVersion guard the delete; unset until that read succeeds.
 */
interface OwnLock {
  verified?: ConfigMap;
}

export class OwnLocks implements OwnCandidates {
  readonly #ctx: HookContext;
  readonly #foreign: ForeignLockSink;
  readonly #releaseTimeoutMs: number;
  /** The pinned lock name (annotation, else option); undefined when discovering. */
  #lockName: string | undefined;
  readonly #locks = new Map<string, OwnLock>();
  readonly #leases = new Map<string, Lease>();
  #lockWatch: Watcher | undefined;
  #leaseWatch: Watcher | undefined;

  constructor(ctx: HookContext, foreign: ForeignLockSink, settings: { lockName: string | undefined; releaseTimeoutMs: number }) {
    this.#ctx = ctx;
    this.#foreign = foreign;
    this.#lockName = settings.lockName;
    this.#releaseTimeoutMs = settings.releaseTimeoutMs;
  }

  get lockName(): string | undefined {
    return this.#lockName;
  }

  /** Whether this pod holds a ConfigMap lock (candidate) of its own: then it waits for no other. */
  get holdsLock(): boolean {
    return this.#locks.size > 0;
  }

  /** Names of the own ConfigMap locks and Leases known now, for the start's log line. */
  get known(): { locks: string[]; leases: string[] } {
    return { locks: [...this.#locks.keys()], leases: [...this.#leases.keys()] };
  }

  /**
   * Starts both watches, for `lockName` only when it is pinned. Resolves
   * once both have listed (at once for one the hook may not list and watch),
   * or the hook stops.
   */
  start(lockName: string | undefined): Promise<void> {
    this.#lockName = lockName;
    const ctx = this.#ctx;
    const stopped = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
    const listed = (start: (done: () => void) => void) => new Promise<void>((resolve) => start(resolve));
    return Promise.race([Promise.all([listed((done) => this.#watchLeases(done)), listed((done) => this.#watchLocks(done))]).then(() => {}), stopped]);
  }

  stop(): void {
    this.#lockWatch?.stop();
    this.#leaseWatch?.stop();
  }

  /** Settles when both watch loops have ended after stop(). */
  get done(): Promise<unknown> {
    return Promise.all([this.#lockWatch?.done, this.#leaseWatch?.done]);
  }

  #watchLeases(listed: () => void): void {
    const ctx = this.#ctx;
    if (!allowed(ctx, 'leases', 'list') || !allowed(ctx, 'leases', 'watch')) {
      listed();
      return;
    }
    const own = (lease: Lease) => isOwnLease(lease, ctx.podName);
    this.#leaseWatch = startWatch<Lease>(
      { client: ctx.client, path: paths.leases(ctx.ns), mode: 'list-watch', what: 'Leases', logger: ctx.log },
      {
        onList: (items) => {
          this.#leases.clear();
          for (const lease of items) if (own(lease) && lease.metadata?.name) this.#leases.set(lease.metadata.name, lease);
          listed();
        },
        onEvent: (type, lease) => {
          const name = lease.metadata?.name;
          if (!name) return;
          if (type !== 'DELETED' && own(lease)) this.#leases.set(name, lease);
          else this.#leases.delete(name);
        },
        onHealth: (up) => ctx.metrics.watchUp('leases', up),
      },
    );
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
            this.classify(cm);
          }
          for (const name of [...this.#locks.keys(), ...this.#foreign.names()]) if (!seen.has(name)) this.#forget(name);
          listed();
        },
        onEvent: (type, cm) => {
          const name = cm.metadata?.name;
          if (!name) return;
          if (type === 'DELETED') this.#forget(name);
          else this.classify(cm);
        },
        onHealth: (up) => ctx.metrics.watchUp('configmaps', up),
      },
    );
  }

  /** Sorts a ConfigMap (metadata, or a full object read live) into an own candidate, another pod's lock, or neither. */
  classify(cm: ConfigMap): void {
    const name = cm.metadata?.name as string;
    const owner = lockCandidateOwner(cm);
    // A lock already marked for deletion (by GC, a foreground delete) is on
    // its way out; deleting it again would change nothing.
    if (!owner || cm.metadata?.deletionTimestamp) {
      this.#forget(name);
      return;
    }
    if (owner.uid !== this.#ctx.podUid) {
      this.#locks.delete(name);
      this.#foreign.track(cm, owner);
      return;
    }
    const known = this.#locks.get(name);
    this.#foreign.forget(name);
    if (known?.verified && known.verified.metadata?.resourceVersion === cm.metadata?.resourceVersion) return;
    const entry: OwnLock = known?.verified ? { verified: known.verified } : {};
    this.#locks.set(name, entry);
    void this.#verify(name, entry);
  }

  #forget(name: string): void {
    this.#locks.delete(name);
    this.#foreign.forget(name);
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
      full = await ctx.client.getConfigMap(ctx.ns, name, backgroundRequest(ctx));
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
    const { client, ns, podUid } = this.#ctx;
    const opts = { signal, timeoutMs: this.#releaseTimeoutMs };
    const mine = (cm: ConfigMap | undefined): cm is ConfigMap => lockOwner(cm)?.uid === podUid;
    const readMine = (name: string) =>
      client.getConfigMap(ns, name, opts).then(
        (cm) => (mine(cm) ? cm : undefined),
        (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
      );
    let names: string[];
    const known: ConfigMap[] = [];
    if (this.#lockWatch?.synced && this.#lockWatch.healthy) {
      names = [];
      for (const [name, entry] of this.#locks) {
        if (entry.verified) known.push(entry.verified);
        else names.push(name);
      }
    } else if (this.#lockName) {
      names = [this.#lockName];
    } else {
      const list = await client.listConfigMapsMetadata(ns, opts);
      names = list.items.filter((cm) => lockCandidateOwner(cm)?.uid === podUid).map((cm) => cm.metadata?.name as string);
    }
    const read = await Promise.all(names.map(readMine));
    return [...known, ...read.filter(mine)];
  }

  /** The own Leases: the watch's when it is connected, else a list (when the hook may list them). */
  async leases(signal: AbortSignal): Promise<Lease[]> {
    const ctx = this.#ctx;
    if (this.#leaseWatch?.synced && this.#leaseWatch.healthy) return [...this.#leases.values()];
    if (!allowed(ctx, 'leases', 'list')) return [];
    const list = await ctx.client.listLeases(ctx.ns, { signal, timeoutMs: this.#releaseTimeoutMs });
    return list.items.filter((l) => isOwnLease(l, ctx.podName));
  }
}
