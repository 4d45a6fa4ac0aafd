/**
 * One pass at a time per key, and none lost. A call while a pass runs for the
 * same key starts nothing: it asks for one more pass once the running one
 * ends (any number of calls meanwhile make one pass), so the latest state is
 * always looked at and no key is worked on twice at once — client-go's
 * workqueue "dirty while processing" rule, without the queue.
 *
 * A pass returns whether it ran to its end. One that stopped early (the key is
 * gone, or it failed and scheduled its own retry) ends the run: a pass asked
 * for meanwhile is dropped, and the retry or the next call brings it back.
 */
export class KeyedSerializer<K> {
  /** Keys with a pass running, and whether another was asked for meanwhile. */
  readonly #again = new Map<K, boolean>();

  /** Runs `pass` for `key` now, or once more after the pass running for it; resolves when this call's part is done. */
  async run(key: K, pass: () => Promise<boolean>): Promise<void> {
    if (this.#again.has(key)) {
      this.#again.set(key, true);
      return;
    }
    try {
      let completed: boolean;
      do {
        this.#again.set(key, false);
        completed = await pass();
      } while (completed && this.#again.get(key));
    } finally {
      this.#again.delete(key);
    }
  }
}
