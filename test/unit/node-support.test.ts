import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MINIMUM_NODE, unsupportedNode } from '../../src/node-support.ts';

test('the CLI refuses a Node.js older than MINIMUM_NODE, naming both versions, and runs on any later one', () => {
  assert.equal(MINIMUM_NODE, '22.10.0');
  for (const ok of ['22.10.0', '22.10.1', '22.23.3', '23.0.0', '24.21.0', 'v26.1.0']) assert.equal(unsupportedNode(ok), undefined, ok);
  for (const old of ['22.9.0', '20.20.2', '18.0.0', 'v22.3.1']) {
    assert.match(unsupportedNode(old) ?? '', new RegExp(`^needs Node.js 22.10.0 or later; this is Node.js v${old.replace(/^v/, '')} \\(`), old);
  }
  assert.equal(unsupportedNode(), undefined, 'the pinned Node.js is supported');
});
