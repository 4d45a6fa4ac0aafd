/**
 * What the generated reports (docs/failover.md, docs/faults.md, docs/soak.md)
 * write the same way: a table row, a time in UTC to the second, and the span
 * of a run from its record.
 */

/** One markdown table row. */
export const row = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;

/** "2026-12-04 17:25:14 UTC". */
export const utc = (iso: string) => `${new Date(iso).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/**
 * From its start to its end, and how long in `howLong`'s words; a record
 * without an end says so (the run was cut short).
 */
export function runSpan(run: { startedAt: string; finishedAt?: string }, howLong: (ms: number) => string): string {
  if (run.finishedAt === undefined) return `started ${utc(run.startedAt)}; the record has no end (the run did not finish)`;
  return `${utc(run.startedAt)} to ${utc(run.finishedAt)} (${howLong(Date.parse(run.finishedAt) - Date.parse(run.startedAt))})`;
}
