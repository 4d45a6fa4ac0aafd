/**
 * Leases renewed as their leaders' electors renew them: every 2 s (the
 * controller-runtime default), each renewal a PUT with the version last
 * read. The benchmarks use it to make a namespace as busy as a real one is
 * for the hooks watching it: every renewal is a watch event to each of them.
 */
import type { Lease } from '../../src/kube/types.ts';
import { admin, sleep } from '../integration/releaser/harness.ts';

/** controller-runtime's RetryPeriod: how often a leader renews its Lease. */
export const RENEW_EVERY_MS = 2_000;

/** A Lease this process renews, as its holder's elector would. */
export interface RenewedLease {
  namespace: string;
  name: string;
  /** The Lease as last written or read: the next renewal carries its version. */
  lease: Lease;
  /** Renewals the API server accepted so far. */
  renewed: number;
  /** A renewal is on its way: the next waits for it, as an elector's does. */
  renewing?: boolean;
}

export const renewedLease = (lease: Lease): RenewedLease => ({
  namespace: lease.metadata?.namespace as string,
  name: lease.metadata?.name as string,
  lease,
  renewed: 0,
});

/**
 * Renews every Lease every 2 s, spread over the period (a renewal still on its
 * way is not overlapped: the round skips that Lease); stops when `signal`
 * aborts. A failed renewal is logged through `log` and the Lease read again.
 */
export function renewLeases(leases: RenewedLease[], signal: AbortSignal, log: (line: string) => void): Promise<void> {
  const kube = admin();
  const renewOne = async (held: RenewedLease) => {
    const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
    const body = { ...held.lease, spec: { ...held.lease.spec, renewTime: now } };
    const path = `/apis/coordination.k8s.io/v1/namespaces/${held.namespace}/leases/${held.name}`;
    try {
      held.lease = await (await kube).request<Lease>({ method: 'PUT', path, body });
      held.renewed++;
    } catch (err) {
      // a conflict means the version moved: read it again, as the elector does
      log(`renewal of ${held.namespace}/${held.name} failed (${String(err).slice(0, 120)}); reading it again`);
      held.lease = await (await kube).getLease(held.namespace, held.name).catch((readErr: unknown) => {
        log(`reading ${held.namespace}/${held.name} again failed too (${String(readErr).slice(0, 120)}); the next round tries again`);
        return held.lease;
      });
    }
  };
  return (async () => {
    while (!signal.aborted) {
      const round = performance.now();
      for (const [i, held] of leases.entries()) {
        const due = round + (i * RENEW_EVERY_MS) / leases.length;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        if (signal.aborted) return;
        // an elector renews again only once its last renewal has answered: one that
        // overlapped it would carry a stale resourceVersion and only conflict
        if (held.renewing) continue;
        held.renewing = true;
        void renewOne(held).finally(() => {
          held.renewing = false;
        });
      }
      const rest = round + RENEW_EVERY_MS - performance.now();
      if (rest > 0) await sleep(rest);
    }
  })();
}
