import type { KubeClient } from '../kube/client.ts';
import type { Logger } from '../line-log.ts';
import type { EventTarget } from './events.ts';
import type { ReleaserMetrics } from './metrics.ts';
import type { KnownPermissions } from './permissions.ts';
import { REQUEST_TIMEOUT_MS } from './request-timeout.ts';

export interface Clock {
  /** Milliseconds since the epoch, like Date.now(). */
  now(): number;
}

/**
 * What every part of the hook shares: who it runs as, how it reaches the API,
 * logs and counts, and when background work ends. Each part keeps its own
 * state; this holds none of it except the permissions, learned once at start.
 */
export interface HookContext {
  readonly client: KubeClient;
  readonly ns: string;
  readonly podName: string;
  readonly podUid: string;
  /** The hostname this process sees, which is the operator's (a pod's containers share it); unset outside a pod. */
  readonly hostname?: string;
  /** This pod, as the subject of an Event. */
  readonly self: EventTarget;
  readonly log: Logger;
  readonly clock: Clock;
  readonly metrics: ReleaserMetrics;
  /** Aborted on SIGTERM and on stop(): watches, retries, reports and their requests end. */
  readonly signal: AbortSignal;
  /** Learned once the start's access reviews have answered; until then (or when they failed) everything counts as allowed. */
  readonly perms: KnownPermissions;
}

/**
 * The context of a part that reaches the API only through the narrow client
 * it is handed, so a test fakes that client alone, in memory.
 */
export type ContextWithoutClient = Omit<HookContext, 'client'>;

/** What the holder evaluations ask of the API: read a lock (of either kind) and a pod, delete a lock. */
export type ForeignLockClient = Pick<KubeClient, 'getConfigMap' | 'deleteConfigMap' | 'getLease' | 'deleteLease' | 'getPod'>;

/** What the own locks ask of the API ahead of SIGTERM and, with the watch down, on it. */
export type OwnLockClient = Pick<KubeClient, 'getConfigMap' | 'listConfigMapsMetadata' | 'listLeases'>;

/** Whether the hook may `verb` `resource` in its namespace, as far as it knows. */
export function allowed(ctx: Pick<HookContext, 'perms'>, resource: string, verb: string): boolean {
  return ctx.perms.can(resource, verb);
}

/** Background requests: bounded, and cancelled when the hook stops or SIGTERM comes. */
export function backgroundRequest(ctx: Pick<HookContext, 'signal'>): { timeoutMs: number; signal: AbortSignal } {
  return { timeoutMs: REQUEST_TIMEOUT_MS, signal: ctx.signal };
}
