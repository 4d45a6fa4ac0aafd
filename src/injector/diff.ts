/**
 * The JSON Patch (RFC 6902) from one JSON value to another, as
 * fast-json-patch's `compare` makes it (arrays index by index, removals from
 * the highest index down before additions from the lowest up, a changed type
 * replaced whole), with two differences that make it cheap on the injector's
 * copy-on-write pods:
 *   - a subtree shared by reference (`===`) is skipped at once, so an
 *     unchanged container, env entry or volume costs one comparison;
 *   - values go into the patch as they are, not deep-cloned: the injector
 *     builds them fresh, and the webhook serializes the patch at once. Treat
 *     a patch, like the pod it came with, as read-only.
 */
import type { Operation } from 'fast-json-patch';
import { isRecord } from '../is-record.ts';

/** RFC 6901: `~` is `~0`, `/` is `~1` in a reference token. */
function escapeToken(key: string): string {
  return key.includes('~') || key.includes('/') ? key.replaceAll('~', '~0').replaceAll('/', '~1') : key;
}

/** Appends to `patch` the operations that turn `before` into `after` at JSON Pointer `path`. */
export function diff(before: unknown, after: unknown, path: string, patch: Operation[]): void {
  if (before === after) return;
  if (after === undefined) {
    patch.push({ op: 'remove', path });
  } else if (before === undefined) {
    patch.push({ op: 'add', path, value: after });
  } else if (Array.isArray(before) && Array.isArray(after)) {
    const common = Math.min(before.length, after.length);
    for (let i = before.length - 1; i >= after.length; i--) patch.push({ op: 'remove', path: `${path}/${i}` });
    for (let i = 0; i < common; i++) diff(before[i], after[i], `${path}/${i}`, patch);
    for (let i = common; i < after.length; i++) patch.push({ op: 'add', path: `${path}/${i}`, value: after[i] });
  } else if (isRecord(before) && isRecord(after)) {
    for (const key of Object.keys(before)) {
      if (before[key] === undefined) continue;
      if (!Object.hasOwn(after, key) || after[key] === undefined) patch.push({ op: 'remove', path: `${path}/${escapeToken(key)}` });
      else diff(before[key], after[key], `${path}/${escapeToken(key)}`, patch);
    }
    for (const key of Object.keys(after)) {
      if (after[key] !== undefined && (!Object.hasOwn(before, key) || before[key] === undefined))
        patch.push({ op: 'add', path: `${path}/${escapeToken(key)}`, value: after[key] });
    }
  } else {
    patch.push({ op: 'replace', path, value: after });
  }
}
