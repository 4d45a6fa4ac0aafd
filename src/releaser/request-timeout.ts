/**
 * How long one of the hook's own API requests may take (its pod, access
 * reviews, Events, background reads): a busy API server answers well within
 * it, and a dead one is retried soon. A release on SIGTERM is bounded by
 * --release-timeout instead.
 */
export const REQUEST_TIMEOUT_MS = 5_000;
