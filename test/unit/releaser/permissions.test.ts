/** What the hook says a missing permission disables (docs/design.md#what-the-hook-needs). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { permissionEffects, permissionKey } from '../../../src/releaser/permissions.ts';

describe('permissionEffects', () => {
  it('without leases delete, names the Leases owned by a pod as left to garbage collection, and nothing else', () => {
    const effects = permissionEffects(new Map([[permissionKey('leases', 'delete'), false]]));
    assert.deepEqual(effects, ['Leases owned by a pod cannot be released: garbage collection frees them']);
  });

  it('with every permission, names nothing', () => assert.deepEqual(permissionEffects(new Map()), []));
});
