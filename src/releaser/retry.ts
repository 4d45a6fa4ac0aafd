/**
 * A retry with capped exponential backoff from 1 s, one pending at a time:
 * the background work of the hook never gives up on a failed read or write
 * (docs/design.md#how-the-hook-fails), and a success starts the count over.
 */
import { backoffDelay } from '../kube/backoff.ts';

export class BackoffRetry {
  readonly #run: () => void;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(run: () => void) {
    this.#run = run;
  }

  /** Runs it again after the next backoff delay, instead of any retry pending. */
  schedule(): void {
    this.cancel();
    this.#failures++;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#run();
      },
      backoffDelay(this.#failures, 1_000),
    );
    this.#timer.unref();
  }

  succeeded(): void {
    this.#failures = 0;
  }

  cancel(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }
}
