// Run by test/tooling/compatibility.test.ts through test/matrix/reporter.ts: one
// test of each outcome, and a suite whose before hook throws.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

test('passes', () => {});
test('fails', () => assert.equal(1, 2, 'one is not two'));
test('skipped', { skip: 'not here' }, () => {});
describe('a suite whose setup fails', () => {
  before(() => {
    throw new Error('no cluster');
  });
  test('never runs', () => {});
});
