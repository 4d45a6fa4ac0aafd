/**
 * kopf peering entries of other pods: R2 from a kopf standby's hook
 * (docs/design.md#kopf-peering-entries). Started only in a pod whose kopf
 * identity is its UID; one list-watch per peering scope the hook may read.
 * Each entry of another identity is looked at when it appears and whenever
 * the pod it names changes: the peering object read live, then the pod of
 * that UID among the namespace's pods. Its entry is removed, with kopf's own
 * merge patch over exactly the version read, only when that pod names itself
 * by its UID and has finished. Never R3: an entry whose pod is not in the
 * namespace may be a pod of another namespace, and kopf drops it once its
 * lifetime has passed.
 */
import { paths } from '../kube/client.ts';
import { isForbidden, isNotFound } from '../kube/errors.ts';
import type { KopfPeering, Pod } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, backgroundRequest, type HookContext } from './context.ts';
import type { EventRecorder } from './events.ts';
import { ForeignRelease } from './foreign-release.ts';
import { HolderWatches, type WatchPodByName } from './holder-watches.ts';
import {
  entryRemoval,
  hasPeerEntry,
  kopfIdentity,
  otherPeerIdentities,
  type PeeringScope,
  peeringNamespace,
  peeringScopes,
  peerEntryId,
} from './kopf-peering.ts';
import { BackoffRetry } from './retry.ts';
import { decideHolderRelease } from './rules.ts';
import { KeyedSerializer } from './serializer.ts';

export interface KopfPeerSources {
  events: EventRecorder;
  watchPod: WatchPodByName;
  /** Observe mode whatever the own pod's annotation says (the flag); the annotation can only add it. */
  observe: boolean;
}

/** One entry of another identity in one peering object. */
interface TrackedEntry {
  readonly scope: PeeringScope;
  readonly peering: string;
  readonly identity: string;
  /** The pod of that UID in this namespace, once found: watched by name. */
  pod: string | undefined;
  readonly retry: BackoffRetry;
}

export class KopfPeers {
  readonly #ctx: HookContext;
  readonly #writer: ForeignRelease;
  readonly #tracked = new Map<string, TrackedEntry>();
  readonly #pods: HolderWatches;
  readonly #passes = new KeyedSerializer<string>();
  readonly #watches: Watcher[] = [];
  #identity = '';

  constructor(ctx: HookContext, sources: KopfPeerSources) {
    this.#ctx = ctx;
    this.#writer = new ForeignRelease(ctx, ctx.client, sources.events, { observe: sources.observe });
    this.#pods = new HolderWatches(ctx, sources.watchPod, (podName) => {
      for (const [key, t] of this.#tracked) if (t.pod === podName) void this.#evaluate(key);
    });
  }

  /** Follows every peering scope the hook may list, for entries other than `identity` (this pod's). */
  async start(identity: string): Promise<void> {
    this.#identity = identity;
    await Promise.all(peeringScopes.map((scope) => this.#follow(scope)));
  }

  stop(): void {
    for (const w of this.#watches) w.stop();
    this.#pods.stop();
    for (const t of this.#tracked.values()) t.retry.cancel();
  }

  /** Settles when the watches have ended after stop(). */
  get done(): Promise<unknown> {
    return Promise.all([...this.#watches.map((w) => w.done), this.#pods.done]);
  }

  /** A probe first: without kopf's CRD or the right to list it, a watch would only retry forever. */
  async #follow(scope: PeeringScope): Promise<void> {
    const ctx = this.#ctx;
    const ns = peeringNamespace(scope, ctx.ns);
    try {
      await ctx.client.listKopfPeerings(ns, { ...backgroundRequest(ctx), limit: 1 });
    } catch (err) {
      if (ctx.signal.aborted) return;
      const why = isNotFound(err)
        ? `kopf's ${scope.kind} resource is not installed`
        : isForbidden(err)
          ? `the hook may not list ${scope.kind} objects`
          : `listing ${scope.kind} objects failed`;
      ctx.log.info(
        { rule: 'R2', kind: scope.kind, ...(isNotFound(err) || isForbidden(err) ? {} : { err }) },
        `kopf entries of ${scope.kind} not followed: ${why}`,
      );
      return;
    }
    if (ctx.signal.aborted) return;
    ctx.log.info({ rule: 'R2', kind: scope.kind, identity: this.#identity }, `following kopf entries of ${scope.kind}`);
    this.#watches.push(
      startWatch<KopfPeering>(
        { client: ctx.client, path: paths.kopfPeerings(ns), mode: 'list-watch', what: `${scope.kind} objects`, logger: ctx.log },
        {
          onList: (items) => this.#replace(scope, items),
          onEvent: (type, peering) => (type === 'DELETED' ? this.#upsert(scope, { metadata: peering.metadata }) : this.#upsert(scope, peering)),
        },
      ),
    );
  }

  #replace(scope: PeeringScope, items: KopfPeering[]): void {
    const names = new Set(items.map((p) => p.metadata?.name));
    for (const [key, t] of [...this.#tracked]) if (t.scope === scope && !names.has(t.peering)) this.#untrack(key);
    for (const p of items) this.#upsert(scope, p);
  }

  /** The entries of one peering object as it is now: new ones looked at, gone ones forgotten; a keep-alive changes nothing. */
  #upsert(scope: PeeringScope, peering: KopfPeering): void {
    const name = peering.metadata?.name;
    if (!name) return;
    const present = new Set(otherPeerIdentities(peering, this.#identity));
    for (const [key, t] of [...this.#tracked]) if (t.scope === scope && t.peering === name && !present.has(t.identity)) this.#untrack(key);
    for (const identity of present) {
      const key = `${peerEntryId(scope, name)}/${identity}`;
      if (this.#tracked.has(key)) continue;
      this.#tracked.set(key, { scope, peering: name, identity, pod: undefined, retry: new BackoffRetry(() => void this.#evaluate(key)) });
      void this.#evaluate(key);
    }
  }

  #untrack(key: string): void {
    const t = this.#tracked.get(key);
    if (!t) return;
    t.retry.cancel();
    this.#tracked.delete(key);
    if (t.pod && ![...this.#tracked.values()].some((o) => o.pod === t.pod)) this.#pods.unwatch(t.pod);
  }

  #evaluate(key: string): Promise<void> {
    return this.#passes.run(key, () => this.#evaluateOnce(key));
  }

  async #evaluateOnce(key: string): Promise<boolean> {
    const ctx = this.#ctx;
    const t = this.#tracked.get(key);
    if (!t || ctx.signal.aborted || !allowed(ctx, 'pods', 'list')) return false;
    const id = peerEntryId(t.scope, t.peering);
    const fields = { rule: 'R2', lock: id, identity: t.identity };
    let peering: KopfPeering;
    let pods: Pod[];
    try {
      peering = await ctx.client.getKopfPeering(peeringNamespace(t.scope, ctx.ns), t.peering, backgroundRequest(ctx));
      // the peering's version first: a pod that wrote the entry since is in the list
      pods = hasPeerEntry(peering, t.identity) ? (await ctx.client.listPods(ctx.ns, backgroundRequest(ctx))).items : [];
    } catch (err) {
      if (isNotFound(err)) this.#untrack(key);
      else if (!ctx.signal.aborted && this.#tracked.get(key) === t) {
        ctx.log.warn({ ...fields, err }, 'cannot read a kopf peering object or the pods of the namespace; will retry');
        t.retry.schedule();
        return false;
      }
      return !ctx.signal.aborted && this.#tracked.has(key);
    }
    if (ctx.signal.aborted || this.#tracked.get(key) !== t) return !ctx.signal.aborted;
    t.retry.succeeded();
    if (!hasPeerEntry(peering, t.identity)) {
      this.#untrack(key);
      return false;
    }
    const holder = pods.find((p) => p.metadata?.uid === t.identity);
    // never R3: no pod of this namespace has that UID (another namespace's, or gone), and kopf drops the entry when it expires
    if (!holder || kopfIdentity(holder).identity !== t.identity) {
      if (ctx.log.isLevelEnabled('debug')) ctx.log.debug(fields, 'no pod of the namespace names itself by this identity; entry left to kopf');
      return true;
    }
    const holderName = holder.metadata?.name as string;
    if (t.pod !== holderName) {
      t.pod = holderName;
      this.#pods.watch(holderName);
    }
    const decision = decideHolderRelease(holder, { apiVersion: 'v1', kind: 'Pod', name: holderName, uid: t.identity });
    if (!decision.release || decision.rule !== 'R2') {
      if (ctx.log.isLevelEnabled('debug')) ctx.log.debug({ ...fields, holder: holderName }, `${decision.message}; entry kept`);
      return true;
    }
    const outcome = await this.#writer.release(
      {
        kind: t.scope.kind,
        name: t.peering,
        holderPod: { name: holderName, uid: t.identity },
        holderFields: { identity: t.identity, holderPod: holderName },
        version: `${peering.metadata?.uid}/${peering.metadata?.resourceVersion}`,
        tracker: t,
        isCurrent: () => this.#tracked.get(key) === t,
        write: (opts) => ctx.client.patchKopfPeering(peeringNamespace(t.scope, ctx.ns), t.peering, entryRemoval(peering, t.identity), opts),
      },
      'R2',
      `kopf entry ${t.identity}: ${decision.message}`,
    );
    if (outcome === 'retry') t.retry.schedule();
    return true;
  }
}
