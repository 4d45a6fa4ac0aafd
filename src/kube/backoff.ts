/** The first retry comes within half a second; none waits more than half a minute, so a recovered API server is seen soon. */
export const BACKOFF_INITIAL_MS = 500;
export const BACKOFF_MAX_MS = 30_000;

/**
 * Exponential backoff with full jitter: attempt 1 waits up to `initialMs`,
 * each further attempt doubles the ceiling up to `maxMs`. Jitter keeps the
 * hooks of many pods from hammering a recovering API server in step.
 */
export function backoffDelay(attempt: number, initialMs = BACKOFF_INITIAL_MS, maxMs = BACKOFF_MAX_MS, random = Math.random): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Resolves after `ms`, or early (without error) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
