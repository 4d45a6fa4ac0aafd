/**
 * errorMessage: an error and its causes on one line, each said once; isRecord:
 * objects with fields, not arrays or null.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { errorMessage } from '../../src/error-message.ts';
import { isRecord } from '../../src/is-record.ts';
import { KubeApiError } from '../../src/kube/errors.ts';

describe('errorMessage', () => {
  it('follows the causes as "outer: inner"', () => {
    assert.equal(errorMessage(new Error('outer', { cause: new Error('inner', { cause: 'deepest' }) })), 'outer: inner: deepest');
    assert.equal(errorMessage('not an Error'), 'not an Error');
  });

  it('does not repeat a cause the message already tells', () => {
    const cause = Object.assign(new Error("EACCES: permission denied, open '/token'"), { code: 'EACCES' });
    assert.equal(errorMessage(new Error('reading token /token: EACCES', { cause })), 'reading token /token: EACCES');
    assert.equal(errorMessage(new Error(`serving metrics on port 1: ${cause.message}`, { cause })), `serving metrics on port 1: ${cause.message}`);
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    const error = new KubeApiError({ method: 'GET', path: '/api', status: 0, reason: 'Timeout', detail: 'no answer in time', cause: timeout });
    assert.equal(errorMessage(error), 'GET /api: Timeout: no answer in time');
  });
});

describe('isRecord', () => {
  it('is true for objects only, not arrays or null', () => {
    assert.deepEqual([{}, { a: 1 }, [], null, 'x', 1, undefined].map(isRecord), [true, true, false, false, false, false, false]);
  });
});
