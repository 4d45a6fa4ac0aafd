/**
 * The summaries every benchmark table prints: nearest-rank percentiles and
 * the p50 / p99 / max spread, with nothing to summarise said as NaN, not 0.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mean, meanDifference, median, percentile, spreadOf } from '../bench/stats.ts';

describe('percentile', () => {
  it('is the smallest value with at least p % of the values at or below it, whatever their order', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    assert.equal(percentile(values, 50), 5);
    assert.equal(percentile(values, 90), 9);
    assert.equal(percentile(values, 99), 10);
    assert.equal(percentile(values, 0), 1);
    assert.equal(median([7]), 7);
    assert.deepEqual(values, [5, 1, 4, 2, 3, 10, 9, 8, 7, 6], 'the values are not sorted in place');
  });
});

describe('spreadOf', () => {
  it('gives p50, p99 and max', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    assert.deepEqual(spreadOf(hundred), { p50: 50, p99: 99, max: 100 });
    assert.deepEqual(spreadOf([3.5]), { p50: 3.5, p99: 3.5, max: 3.5 });
  });

  it('gives NaN for each where there are no values, never 0 or -Infinity', () => {
    assert.deepEqual(spreadOf([]), { p50: Number.NaN, p99: Number.NaN, max: Number.NaN });
  });
});

describe('meanDifference', () => {
  it("is a's mean less b's, with the half-width of its 95 % interval from Welch's standard error", () => {
    const { difference, halfWidth } = meanDifference([1, 2, 3], [1, 1, 1, 1]);
    assert.equal(difference, 1);
    // variance of a: 1, of b: 0; 1.96 * sqrt(1/3)
    assert.ok(Math.abs(halfWidth - 1.96 * Math.sqrt(1 / 3)) < 1e-12);
    assert.equal(mean([]), Number.NaN);
  });

  it('has no interval below two values a side', () => {
    assert.equal(meanDifference([1], [2, 3]).halfWidth, Number.NaN);
  });
});
