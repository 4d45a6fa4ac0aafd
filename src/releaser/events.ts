import { randomBytes } from 'node:crypto';
import type { KubeEvent } from '../kube/types.ts';
import { allowed, type HookContext } from './context.ts';
import { REQUEST_TIMEOUT_MS } from './request-timeout.ts';

export type EventReason = 'LeaderLockReleased' | 'LeaderLockWouldRelease' | 'LeaderLockHeld' | 'ReleaseHookPermissionsMissing';

export interface EventTarget {
  name: string;
  namespace: string;
  uid?: string;
}

/**
 * A core/v1 Event about a pod, as `kubectl describe pod` shows it. Built by
 * hand (the hook may only create Events, not patch them, so each report is a
 * new object with a unique name).
 */
export function buildPodEvent(init: {
  target: EventTarget;
  reason: EventReason;
  message: string;
  type: 'Normal' | 'Warning';
  reportingInstance: string;
  now: number;
}): KubeEvent {
  const time = new Date(init.now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const suffix = `${init.now.toString(16)}${randomBytes(3).toString('hex')}`;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${init.target.name.slice(0, 200)}.${suffix}`, namespace: init.target.namespace },
    involvedObject: {
      apiVersion: 'v1',
      kind: 'Pod',
      name: init.target.name,
      namespace: init.target.namespace,
      ...(init.target.uid ? { uid: init.target.uid } : {}),
    },
    reason: init.reason,
    // the API rejects Event messages over 1 KiB
    message: init.message.length > 1024 ? `${init.message.slice(0, 1021)}...` : init.message,
    type: init.type,
    source: { component: 'leaderhook' },
    reportingComponent: 'leaderhook.io/release-hook',
    reportingInstance: init.reportingInstance,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

export interface EventRecorder {
  /** Records an Event on `target`; never rejects (a failure is logged: the log line is the record then). */
  emit(target: EventTarget, reason: EventReason, type: 'Normal' | 'Warning', message: string, signal?: AbortSignal): Promise<void>;
  /** A release of another pod's lock is told on that pod and on this one, so it is found from either. */
  emitOnBoth(holder: EventTarget, reason: EventReason, message: string): Promise<void>;
}

/** Events of this hook: reported by this pod, skipped without a word when it may not create Events (the start said so once). */
export function eventRecorder(ctx: HookContext): EventRecorder {
  async function emit(target: EventTarget, reason: EventReason, type: 'Normal' | 'Warning', message: string, signal?: AbortSignal): Promise<void> {
    if (!allowed(ctx, 'events', 'create')) return;
    try {
      const event = buildPodEvent({ target, reason, message, type, reportingInstance: ctx.podName, now: ctx.clock.now() });
      await ctx.client.createEvent(ctx.ns, event, { timeoutMs: REQUEST_TIMEOUT_MS, ...(signal ? { signal } : {}) });
    } catch (err) {
      ctx.log.warn({ err, reason }, 'could not record Event');
    }
  }
  return {
    emit,
    async emitOnBoth(holder, reason, message) {
      await Promise.all([emit(holder, reason, 'Normal', message), emit(ctx.self, reason, 'Normal', `${message} (by this pod's release hook)`)]);
    },
  };
}
