/**
 * What the releaser's unit tests fake in memory: API objects (a read by name
 * that answers 404 like the API server, and a guarded delete, each recorded
 * in the call log in order) and the hook's context without a client.
 */
import { pino } from 'pino';
import type { Preconditions } from '../../../src/kube/client.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import type { ContextWithoutClient } from '../../../src/releaser/context.ts';
import { noMetrics } from '../../../src/releaser/metrics.ts';
import { KnownPermissions, permissionKey } from '../../../src/releaser/permissions.ts';

/** The context of the hook of pod `self` in namespace `ns`, silent, at time 0; it may not watch pods, so no holder watch is needed. */
export function testContext(self: { name: string; uid: string }): ContextWithoutClient {
  return {
    ns: 'ns',
    podName: self.name,
    podUid: self.uid,
    self: { name: self.name, namespace: 'ns', uid: self.uid },
    log: pino({ level: 'silent' }),
    clock: { now: () => 0 },
    metrics: noMetrics,
    signal: new AbortController().signal,
    perms: new KnownPermissions(new Map([[permissionKey('pods', 'watch'), false]])),
  };
}

export const notFound = (path: string) => new KubeApiError({ method: 'GET', path, status: 404, reason: 'NotFound', detail: 'not found' });

/** `get<Kind>` and `delete<Kind>` over `objects`, logging `get<Kind> name` and `delete<Kind> name preconditions` to `calls`. */
export function memoryObjects<T>(kind: string, resource: string, objects: Map<string, T>, calls: string[]) {
  return {
    async get(_ns: string, name: string): Promise<T> {
      calls.push(`get${kind} ${name}`);
      const found = objects.get(name);
      if (!found) throw notFound(`${resource}/${name}`);
      return found;
    },
    async delete(_ns: string, name: string, preconditions: Preconditions): Promise<void> {
      calls.push(`delete${kind} ${name} ${JSON.stringify(preconditions)}`);
      objects.delete(name);
    },
  };
}
