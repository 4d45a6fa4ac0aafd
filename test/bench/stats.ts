/** Summaries the benchmarks print, defined once so their tables mean the same thing. */

/** The nearest-rank percentile: the smallest value with at least p % of the values at or below it. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

/** The spread of a figure over samples, as the soak's and the hook-sampling tables print it. */
export interface Spread {
  p50: number;
  p99: number;
  max: number;
}

/** The p50, p99 and max of `values` (NaN for each where there are none). */
export const spreadOf = (values: readonly number[]): Spread => ({
  p50: percentile(values, 50),
  p99: percentile(values, 99),
  max: values.length === 0 ? Number.NaN : Math.max(...values),
});

export const mean = (values: readonly number[]): number => (values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length);

/** The sample variance (n − 1 in the denominator); NaN below two values. */
function variance(values: readonly number[]): number {
  if (values.length < 2) return Number.NaN;
  const m = mean(values);
  return values.reduce((sum, value) => sum + (value - m) ** 2, 0) / (values.length - 1);
}

/**
 * The difference of two samples' means (a − b) and the half-width of its 95 %
 * interval, Welch's standard error under the normal approximation (1.96): a
 * difference smaller than the half-width is not told apart from chance.
 */
export function meanDifference(a: readonly number[], b: readonly number[]): { difference: number; halfWidth: number } {
  return { difference: mean(a) - mean(b), halfWidth: 1.96 * Math.sqrt(variance(a) / a.length + variance(b) / b.length) };
}
