import { randomBytes } from 'node:crypto';
import type { KubeClient, RequestOptions } from '../kube/client.ts';
import type { KubeEvent } from '../kube/types.ts';

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

export async function recordEvent(client: KubeClient, event: KubeEvent, opts?: RequestOptions): Promise<void> {
  await client.createEvent(event.metadata.namespace ?? '', event, opts);
}
