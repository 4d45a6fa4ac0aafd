/**
 * A node:test reporter for `npm run test:matrix`: one JSON line per test that
 * ran to an end (test/matrix/compatibility.ts, TestResult), for the
 * compatibility table. Suites count only when they fail themselves (a
 * `before` hook that threw): their tests then never report, and the failure
 * must not vanish from the row.
 *
 *   node --test --test-reporter=spec --test-reporter-destination=stdout \
 *     --test-reporter=./test/matrix/reporter.ts --test-reporter-destination=FILE ...
 */
import { relative } from 'node:path';
import type { TestResult } from './compatibility.ts';

interface TestEventData {
  name: string;
  nesting: number;
  file?: string;
  skip?: boolean | string;
  todo?: boolean | string;
  details: { duration_ms: number; type?: 'suite' | 'test'; error?: Error & { cause?: unknown } };
}

/** The first line of what a failed test threw: its assertion's message, not the wrapper's "test failed". */
function reasonOf(error: (Error & { cause?: unknown }) | undefined): string {
  const cause = error?.cause;
  const message = cause instanceof Error ? cause.message : typeof cause === 'string' ? cause : (error?.message ?? 'failed');
  return message.split('\n')[0]!.slice(0, 300);
}

export default async function* matrixReporter(source: AsyncIterable<{ type: string; data: TestEventData }>): AsyncGenerator<string> {
  for await (const { type, data } of source) {
    if (type !== 'test:pass' && type !== 'test:fail') continue;
    const failed = type === 'test:fail';
    if (data.details.type === 'suite' && !failed) continue;
    const result: TestResult = {
      file: data.file ? relative(process.cwd(), data.file) : '?',
      name: data.details.type === 'suite' ? `${data.name} (suite)` : data.name,
      outcome: data.skip || data.todo ? 'skipped' : failed ? 'failed' : 'passed',
      durationMs: Math.round(data.details.duration_ms),
      ...(failed ? { reason: reasonOf(data.details.error) } : {}),
    };
    yield `${JSON.stringify(result)}\n`;
  }
}
