import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exitCode, failed, formatJson, formatResult, formatSummary, listSome, passed, reportDocument } from '../../../src/check/report.ts';

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

  it("--output json: every check with name, ok, detail and remedy, then the summary, in the text lines' words", () => {
    const results = [passed('API server', 'https://a/: Kubernetes v1.34.4'), failed('webhook endpoints', 'no ready endpoint', 'scale it up')];
    assert.deepEqual(reportDocument(results), {
      checks: [
        { name: 'API server', ok: true, detail: 'https://a/: Kubernetes v1.34.4', remedy: null },
        { name: 'webhook endpoints', ok: false, detail: 'no ready endpoint', remedy: 'scale it up' },
      ],
      summary: { ok: false, total: 2, passed: 1, failed: 1, text: '1 of 2 checks failed' },
    });
    const text = formatJson(results);
    assert.ok(text.endsWith('}\n'), 'one document, ending in a newline');
    assert.deepEqual(JSON.parse(text), reportDocument(results));
    assert.equal(reportDocument([]).summary.ok, false, 'nothing checked is not a pass, as the exit code says');
  });

  it('lists a few names and counts the rest', () => {
    assert.equal(listSome(['a', 'b']), 'a, b');
    assert.equal(listSome(['a', 'b', 'c', 'd'], 2), 'a, b and 2 more');
  });
});
