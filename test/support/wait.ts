/**
 * Waiting for something by asking again until it is there, or failing with
 * what was awaited. Loads no cluster client: test/support/kube.ts refuses to
 * load outside the local cluster's network namespace, and the tests that run
 * outside it wait too.
 */

/**
 * Polls `check` until it returns something other than undefined, null or
 * false, and returns that. Errors `check` throws count as "not yet"; the last
 * one is named if time runs out.
 */
export async function waitFor<T>(description: string, check: () => Promise<T | undefined | null | false>, timeoutMs: number, intervalMs = 200): Promise<T> {
  const started = Date.now();
  let lastError: unknown;
  for (;;) {
    try {
      const result = await check();
      if (result !== undefined && result !== null && result !== false) return result;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() - started >= timeoutMs) {
      const cause = lastError === undefined ? '' : `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${cause}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
