/**
 * The in-memory API objects the releaser's unit tests fake: a read by name
 * that answers 404 like the API server, and a guarded delete, each recorded
 * in the call log in order.
 */

import type { Preconditions } from '../../../src/kube/client.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';

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
