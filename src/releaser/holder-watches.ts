/**
 * A holder's status changes without its lock changing, so each holder of a
 * tracked lock is watched too (docs/design.md#live-reads-and-guarded-writes:
 * an event only triggers a live read). Watch only, by name: the hook may
 * watch pods without listing them.
 */
import { paths } from '../kube/client.ts';
import type { Pod } from '../kube/types.ts';
import { startWatch, type Watcher } from '../kube/watch.ts';
import { allowed, type ContextWithoutClient, type HookContext } from './context.ts';

/** Starts a watch of the pod named `name`, calling `onChange` on each of its events. */
export type WatchPodByName = (name: string, onChange: () => void) => Watcher;

/** The API's pod watch, as HolderWatches uses it. */
export function podWatchOf(ctx: HookContext): WatchPodByName {
  return (name, onChange) =>
    startWatch<Pod>(
      { client: ctx.client, path: paths.pods(ctx.ns), fieldSelector: `metadata.name=${name}`, mode: 'watch', what: `holder pod ${name}`, logger: ctx.log },
      { onEvent: onChange },
    );
}

export class HolderWatches {
  readonly #ctx: ContextWithoutClient;
  readonly #watchPod: WatchPodByName;
  readonly #onChange: (holderName: string) => void;
  readonly #watches = new Map<string, Watcher>();

  constructor(ctx: ContextWithoutClient, watchPod: WatchPodByName, onChange: (holderName: string) => void) {
    this.#ctx = ctx;
    this.#watchPod = watchPod;
    this.#onChange = onChange;
  }

  watch(holderName: string): void {
    if (this.#watches.has(holderName) || !allowed(this.#ctx, 'pods', 'watch') || this.#ctx.signal.aborted) return;
    this.#watches.set(
      holderName,
      this.#watchPod(holderName, () => this.#onChange(holderName)),
    );
  }

  unwatch(holderName: string): void {
    this.#watches.get(holderName)?.stop();
    this.#watches.delete(holderName);
  }

  stop(): void {
    for (const w of this.#watches.values()) w.stop();
  }

  /** Settles when the watches have ended after stop(). */
  get done(): Promise<unknown> {
    return Promise.all([...this.#watches.values()].map((w) => w.done));
  }
}
