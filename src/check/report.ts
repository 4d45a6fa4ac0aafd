/**
 * What `leaderhook check` prints: one line per check, ✓ or ✗, and for a ✗
 * the remedy on the same line, so a failing line can be copied into an
 * issue or a chat as it is; or, with --output json, one document for
 * scripts. Exit code 0 only when every check passed.
 */

export interface CheckResult {
  ok: boolean;
  /** What was checked, e.g. `webhook endpoints` or `namespace ops: dry-run pod`. */
  title: string;
  /** What was found. */
  detail: string;
  /** What to do about a ✗; a ✓ needs none. */
  remedy?: string;
}

export function passed(title: string, detail: string): CheckResult {
  return { ok: true, title, detail };
}

export function failed(title: string, detail: string, remedy: string): CheckResult {
  return { ok: false, title, detail, remedy };
}

export function formatResult(result: CheckResult): string {
  const line = `${result.ok ? '✓' : '✗'} ${result.title}: ${result.detail}`;
  return result.ok || !result.remedy ? line : `${line} — fix: ${result.remedy}`;
}

export function formatSummary(results: readonly CheckResult[]): string {
  const failures = results.filter((r) => !r.ok).length;
  return failures === 0 ? `all ${results.length} checks passed` : `${failures} of ${results.length} checks failed`;
}

/** `check --output json`: every check, then the summary; what the text lines say, with the same words. */
export interface ReportDocument {
  checks: { name: string; ok: boolean; detail: string; remedy: string | null }[];
  summary: { ok: boolean; total: number; passed: number; failed: number; text: string };
}

export function reportDocument(results: readonly CheckResult[]): ReportDocument {
  const failures = results.filter((r) => !r.ok).length;
  return {
    checks: results.map((r) => ({ name: r.title, ok: r.ok, detail: r.detail, remedy: r.remedy ?? null })),
    summary: { ok: exitCode(results) === 0, total: results.length, passed: results.length - failures, failed: failures, text: formatSummary(results) },
  };
}

export function formatJson(results: readonly CheckResult[]): string {
  return `${JSON.stringify(reportDocument(results), null, 2)}\n`;
}

export function exitCode(results: readonly CheckResult[]): 0 | 1 {
  return results.length > 0 && results.every((r) => r.ok) ? 0 : 1;
}

/** Up to `max` names, and how many more: lines stay readable in a namespace of hundreds of pods. */
export function listSome(names: readonly string[], max = 5): string {
  const shown = names.slice(0, max).join(', ');
  return names.length > max ? `${shown} and ${names.length - max} more` : shown;
}
