/** After 410 Gone the recorder lists again: what changed since it last saw each object, in revision order. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { relistChanges } from '../../support/relist.ts';

const object = (name: string, rv: string) => ({ metadata: { name, resourceVersion: rv } });

describe('relist', () => {
  test('new objects are ADDED, changed ones MODIFIED, vanished ones DELETED at the list revision, unchanged ones nothing', () => {
    const known = new Map([
      ['unchanged', object('unchanged', '10')],
      ['heartbeat', object('heartbeat', '12')],
      ['lock', object('lock', '11')],
    ]);
    const changes = relistChanges(known, [object('unchanged', '10'), object('heartbeat', '95'), object('new-lock', '90')], 100n);
    assert.deepEqual(
      changes.map((change) => [change.type, change.object.metadata.name, change.rv]),
      [
        ['ADDED', 'new-lock', 90n],
        ['MODIFIED', 'heartbeat', 95n],
        ['DELETED', 'lock', 100n],
      ],
    );
    assert.equal(changes.find((change) => change.type === 'DELETED')?.object, known.get('lock'), 'a deletion carries the object as last seen');
  });

  test('the first list of a watch reports every object as ADDED', () => {
    assert.deepEqual(
      relistChanges(new Map(), [object('b', '7'), object('a', '5')], 8n).map((change) => [change.type, change.object.metadata.name]),
      [
        ['ADDED', 'a'],
        ['ADDED', 'b'],
      ],
    );
  });
});
