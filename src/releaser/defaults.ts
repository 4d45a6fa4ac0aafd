/**
 * The release hook's defaults, in one place: the flags table shows them in
 * `--help` and docs/reference.md, runReleaser applies them to options left unset.
 * Nothing else lives here, so the flags table loads no more than these numbers.
 */
export const releaseDefaults = {
  /** R1: a SIGTERM must come this long before the deletion deadline (kubelet rounding + clock skew). */
  marginSeconds: 2,
  /** The SIGTERM release gives up after this long; garbage collection remains the fallback. */
  releaseTimeoutMs: 1500,
  /** How often a waiting standby re-reads and reports the holder of the lock it waits for. */
  waitReportIntervalSeconds: 60,
} as const;
