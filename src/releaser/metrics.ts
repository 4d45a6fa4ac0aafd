import type { Logger } from '../line-log.ts';
import type { ReleasedKind } from './lock-kinds.ts';

export type ReleaseOutcome = 'released' | 'observed' | 'moved' | 'kept' | 'failed';

/** What the hook counts. The no-op version costs nothing when the port is off (the default). */
export interface ReleaserMetrics {
  release(rule: string, kind: ReleasedKind, outcome: ReleaseOutcome): void;
  /** R1 decided not to release, and why (pastDeadline, notBeingDeleted, ...). */
  refused(rule: string, refusal: string): void;
  /** A permission the hook needs and lacks, found at start. */
  permissionMissing(resource: string, verb: string): void;
  waiting(lock: string, holder: string, state: string, seconds: number): void;
  clearWaiting(lock: string): void;
  watchUp(watch: string, up: boolean): void;
  close(): Promise<void>;
}

export const noMetrics: ReleaserMetrics = {
  release() {},
  refused() {},
  permissionMissing() {},
  waiting() {},
  clearWaiting() {},
  watchUp() {},
  close: async () => {},
};

/**
 * Prometheus metrics on `port` (GET /metrics). prom-client and node:http are
 * loaded here, at start, only when the port is enabled: never after SIGTERM,
 * never in pods that did not ask for metrics.
 */
export async function startMetrics(port: number, logger: Logger): Promise<ReleaserMetrics> {
  const [prom, http] = await Promise.all([import('prom-client'), import('node:http')]);
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const releases = new prom.Counter({
    name: 'leaderhook_hook_releases_total',
    help: 'Lock releases decided by the hook, by rule (R0-R3), lock kind (ConfigMap, Lease, or the kopf peering object of an entry) and outcome (released, observed, moved, kept: a Lease identity another pod could carry, failed).',
    labelNames: ['rule', 'kind', 'outcome'],
    registers: [registry],
  });
  const refusals = new prom.Counter({
    name: 'leaderhook_hook_release_refusals_total',
    help: 'Releases the hook refused, by rule and refusal (R1: pastDeadline, notBeingDeleted, ownPodGone, ownPodReplaced, ...).',
    labelNames: ['rule', 'refusal'],
    registers: [registry],
  });
  const missingPermissions = new prom.Gauge({
    name: 'leaderhook_hook_permission_missing',
    help: '1 for each permission the hook needs in its namespace and was denied at start (see deploy/operator-rbac).',
    labelNames: ['resource', 'verb'],
    registers: [registry],
  });
  const wait = new prom.Gauge({
    name: 'leaderhook_hook_lock_wait_seconds',
    help: 'How long this standby has been waiting for a lock held by another pod, with the holder and its state.',
    labelNames: ['lock', 'holder', 'state'],
    registers: [registry],
  });
  // a lock's series changes labels when its holder or state changes: drop the old one
  const waitLabels = new Map<string, { lock: string; holder: string; state: string }>();
  const watches = new prom.Gauge({
    name: 'leaderhook_hook_watch_up',
    help: '1 while the watch is connected, 0 while it reconnects.',
    labelNames: ['watch'],
    registers: [registry],
  });
  const server = http.createServer(async (req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') {
      try {
        const body = await registry.metrics();
        res.writeHead(200, { 'Content-Type': registry.contentType });
        res.end(body);
      } catch (err) {
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end(`collecting metrics: ${(err as Error).message}\n`);
      }
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found; metrics are at /metrics\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`serving metrics on port ${port}: ${err.message}`, { cause: err })));
    server.listen(port, () => resolve());
  });
  logger.info({ port }, `metrics on :${port}/metrics`);
  return {
    release: (rule, kind, outcome) => releases.inc({ rule, kind, outcome }),
    refused: (rule, refusal) => refusals.inc({ rule, refusal }),
    permissionMissing: (resource, verb) => missingPermissions.set({ resource, verb }, 1),
    waiting: (lock, holder, state, seconds) => {
      const previous = waitLabels.get(lock);
      if (previous && (previous.holder !== holder || previous.state !== state)) wait.remove(previous);
      const labels = { lock, holder, state };
      waitLabels.set(lock, labels);
      wait.set(labels, seconds);
    },
    clearWaiting: (lock) => {
      const previous = waitLabels.get(lock);
      if (previous) wait.remove(previous);
      waitLabels.delete(lock);
    },
    watchUp: (watch, up) => watches.set({ watch }, up ? 1 : 0),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
