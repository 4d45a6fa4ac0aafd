import { buildRevision, shortRevision } from '../build-info.ts';
import type { ParsedFlags } from '../flags.ts';
import { version } from '../version.ts';
import type { versionFlags } from './flags.ts';

/**
 * `leaderhook version`: `leaderhook 0.1.0 (commit abc1234)`, or with
 * --output json `{"version": "0.1.0", "commit": "<full id>"}`; the commit is
 * null (text: unknown) when the build did not record it.
 */
export function runVersionCommand({ values }: ParsedFlags<typeof versionFlags>): void {
  const revision = buildRevision();
  if (values.output === 'json') {
    process.stdout.write(`${JSON.stringify({ version, commit: revision ?? null })}\n`);
    return;
  }
  process.stdout.write(`leaderhook ${version} (commit ${revision ? shortRevision(revision) : 'unknown'})\n`);
}
