import type { Logger } from '../line-log.ts';
import { BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, backoffDelay, sleep } from './backoff.ts';
import type { KubeClient } from './client.ts';
import { errorFromStatus, isGone, KubeApiError } from './errors.ts';
import type { KubeObject, List, WatchEvent } from './types.ts';

export interface WatchOptions<T extends KubeObject = KubeObject> {
  client: KubeClient;
  /** Collection path, e.g. /api/v1/namespaces/x/configmaps */
  path: string;
  fieldSelector?: string;
  labelSelector?: string;
  /**
   * `list-watch`: list, then watch from the list's resourceVersion (needs
   * the list verb). `watch`: watch only; a watch without resourceVersion
   * starts with a synthetic ADDED for every existing object, which serves as
   * the list (for resources the caller may watch but not list).
   */
  mode: 'list-watch' | 'watch';
  /** Accept headers of the list and the watch (metadataAccept for metadata only); default application/json. */
  accept?: { list: string; watch: string };
  /**
   * Keeps only the listed objects this accepts; the others are dropped page
   * by page, so a large collection is never held whole. A dropped object
   * counts as absent for onList.
   */
  keep?: (object: T) => boolean;
  /** Names the watched thing in log lines. */
  what: string;
  logger: Logger;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Reconnect when the stream stays silent this long (bookmarks arrive about once a minute). */
  idleTimeoutMs?: number;
}

export interface WatchHandlers<T> {
  /** The complete current set (at start and after every relist): replaces what is known. */
  onList?(items: T[]): void;
  onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void;
  /** Called on each change between connected and not (for metrics and reports). */
  onHealth?(healthy: boolean): void;
}

export interface Watcher {
  /** True once a list (or a first watch connection) has delivered the current state. */
  readonly synced: boolean;
  /** True while a watch stream is open and no relist is pending. */
  readonly healthy: boolean;
  stop(): void;
  /** Settles when the loop has ended after stop(). */
  readonly done: Promise<void>;
}

/**
 * A reflector loop: list, watch from the list's resourceVersion, follow
 * bookmarks, relist on 410 Gone, reconnect with capped exponential backoff on
 * any other failure (API outage, RBAC denial, dead connection). It never
 * throws and never gives up: the hook must outlive API-server restarts
 * (docs/design.md#how-the-hook-fails).
 */
export function startWatch<T extends KubeObject>(opts: WatchOptions<T>, handlers: WatchHandlers<T>): Watcher {
  return new Reflector(opts, handlers);
}

/** The reflector behind startWatch, named after client-go's: its loop and what it knows of the connection. */
class Reflector<T extends KubeObject> implements Watcher {
  readonly #opts: WatchOptions<T>;
  readonly #handlers: WatchHandlers<T>;
  readonly #abort = new AbortController();
  readonly #log: Logger;
  #synced = false;
  #healthy = false;
  readonly done: Promise<void>;

  constructor(opts: WatchOptions<T>, handlers: WatchHandlers<T>) {
    this.#opts = opts;
    this.#handlers = handlers;
    this.#log = opts.logger.child({ watch: opts.what });
    this.done = this.#loop().catch((err: unknown) => {
      this.#log.error({ err }, `watch of ${opts.what} stopped unexpectedly`);
    });
  }

  get synced(): boolean {
    return this.#synced;
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  stop(): void {
    this.#abort.abort();
  }

  #setHealthy(h: boolean): void {
    if (h !== this.#healthy) {
      this.#healthy = h;
      this.#handlers.onHealth?.(h);
    }
  }

  // A handler's own failure must not look like a broken watch.
  #deliver(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.error({ err }, `handling an event of ${this.#opts.what} failed`);
    }
  }

  async #loop(): Promise<void> {
    const opts = this.#opts;
    const handlers = this.#handlers;
    const log = this.#log;
    const signal = this.#abort.signal;
    const initialMs = opts.initialBackoffMs ?? BACKOFF_INITIAL_MS;
    const maxMs = opts.maxBackoffMs ?? BACKOFF_MAX_MS;
    let resourceVersion: string | undefined;
    let needList = opts.mode === 'list-watch';
    let attempt = 0;
    let lastWasGone = false;
    while (!signal.aborted) {
      const openedAt = Date.now();
      try {
        if (needList) {
          const list = await listAll(opts, signal);
          resourceVersion = list.resourceVersion;
          this.#deliver(() => handlers.onList?.(list.items));
          needList = false;
          this.#synced = true;
          attempt = 0;
        }
        const res = await opts.client.openStream({
          path: opts.path,
          query: {
            watch: true,
            allowWatchBookmarks: true,
            resourceVersion,
            fieldSelector: opts.fieldSelector,
            labelSelector: opts.labelSelector,
            // spread reconnects of many hooks over time
            timeoutSeconds: 240 + Math.floor(Math.random() * 120),
          },
          idleTimeoutMs: opts.idleTimeoutMs ?? 90_000,
          signal,
          ...(opts.accept ? { accept: opts.accept.watch } : {}),
        });
        this.#setHealthy(true);
        if (opts.mode === 'watch') this.#synced = true;
        res.setEncoding('utf8');
        await readEvents<T>(res as AsyncIterable<string>, opts.client.stats, (event) => {
          if (event.type === 'ERROR') throw errorFromStatus('WATCH', opts.path, event.object as never);
          const rv = event.object?.metadata?.resourceVersion;
          if (rv) resourceVersion = rv;
          lastWasGone = false;
          if (event.type !== 'BOOKMARK') this.#deliver(() => handlers.onEvent(event.type as 'ADDED' | 'MODIFIED' | 'DELETED', event.object));
        });
        // The server closed the stream at timeoutSeconds: resume from where we
        // are. A stream that ends at once, again and again, still backs off.
        if (Date.now() - openedAt > 5_000) attempt = 0;
        else await sleep(backoffDelay(++attempt, initialMs, maxMs), signal);
      } catch (err) {
        if (signal.aborted) break;
        this.#setHealthy(false);
        if (isGone(err)) {
          // Our resourceVersion is older than etcd's compaction window: start
          // over from the current state, at once the first time.
          log.info({ err }, `watch of ${opts.what} expired (410 Gone), relisting`);
          resourceVersion = undefined;
          needList = opts.mode === 'list-watch';
          if (!lastWasGone) {
            lastWasGone = true;
            continue;
          }
        } else {
          lastWasGone = false;
        }
        attempt = Date.now() - openedAt > 60_000 ? 1 : attempt + 1;
        const delay = backoffDelay(attempt, initialMs, maxMs);
        const forbidden = err instanceof KubeApiError && (err.status === 401 || err.status === 403);
        log[forbidden || attempt > 3 ? 'warn' : 'info']({ err, attempt, retryInMs: delay }, `watch of ${opts.what} interrupted, retrying`);
        await sleep(delay, signal);
      }
    }
    this.#setHealthy(false);
  }
}

/** Lists every page, keeping only what `opts.keep` accepts, so a large collection is never held whole. */
async function listAll<T extends KubeObject>(opts: WatchOptions<T>, signal: AbortSignal): Promise<{ items: T[]; resourceVersion: string | undefined }> {
  const items: T[] = [];
  let cont: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const page = await opts.client.request<List<T>>({
      method: 'GET',
      path: opts.path,
      query: { fieldSelector: opts.fieldSelector, labelSelector: opts.labelSelector, limit: 500, continue: cont },
      signal,
      timeoutMs: 30_000,
      ...(opts.accept ? { accept: opts.accept.list } : {}),
    });
    for (const item of page.items ?? []) if (!opts.keep || opts.keep(item)) items.push(item);
    cont = page.metadata?.continue || undefined;
    resourceVersion = page.metadata?.resourceVersion;
  } while (cont);
  return { items, resourceVersion };
}

/**
 * Reads a watch stream, one JSON event a line, counting the bytes received.
 * `onEvent` runs for each line at once, the lines of one chunk together; an
 * exception it throws ends the stream.
 */
async function readEvents<T>(stream: AsyncIterable<string>, stats: { bytesReceived: number }, onEvent: (event: WatchEvent<T>) => void): Promise<void> {
  // a chunk may end inside a line: that part waits for the next chunk
  let partial = '';
  for await (const chunk of stream) {
    stats.bytesReceived += Buffer.byteLength(chunk);
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() as string;
    for (const line of lines) if (line.trim()) onEvent(JSON.parse(line) as WatchEvent<T>);
  }
}
