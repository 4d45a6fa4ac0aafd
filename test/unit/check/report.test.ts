import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exitCode, failed, formatResult, formatSummary, listSome, passed } from '../../../src/check/report.ts';

describe('check report', () => {
  it('prints one line per check: ✓, or ✗ with the remedy on the same line', () => {
    assert.equal(formatResult(passed('webhook endpoints', 'Service a/b has 2 ready endpoints')), '✓ webhook endpoints: Service a/b has 2 ready endpoints');
    const line = formatResult(failed('webhook endpoints', 'no ready endpoint', 'scale it up'));
    assert.equal(line, '✗ webhook endpoints: no ready endpoint — fix: scale it up');
    assert.ok(!line.includes('\n'));
  });

  it('exits 0 only when every check passed, and 1 when there was nothing to check', () => {
    const ok = passed('a', 'fine');
    const bad = failed('b', 'broken', 'mend it');
    assert.equal(exitCode([ok, ok]), 0);
    assert.equal(exitCode([ok, bad]), 1);
    assert.equal(exitCode([]), 1);
    assert.equal(formatSummary([ok, ok]), 'all 2 checks passed');
    assert.equal(formatSummary([ok, bad, bad]), '2 of 3 checks failed');
  });

  it('lists a few names and counts the rest', () => {
    assert.equal(listSome(['a', 'b']), 'a, b');
    assert.equal(listSome(['a', 'b', 'c', 'd'], 2), 'a, b and 2 more');
  });
});
