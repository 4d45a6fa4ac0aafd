/**
 * Writes DIST/build-info.json, the commit `leaderhook version` names, after
 * `npm run build` compiled into DIST: the image's build stage runs it (its
 * context has no .git, so the commit comes in as a build argument), and so
 * does the npm package's staging.
 *
 *   node scripts/build-info.ts DIST     the commit: $LEADERHOOK_REVISION when set
 *                                       (empty: unknown), else git's of this checkout
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD_INFO_FILE, formatBuildInfo, gitRevision } from '../src/build-info.ts';

export function writeBuildInfo(dist: string, revision: string | undefined): string {
  const file = join(dist, BUILD_INFO_FILE);
  writeFileSync(file, formatBuildInfo(revision));
  return file;
}

if (import.meta.main) {
  const [dist, ...rest] = process.argv.slice(2);
  if (!dist || rest.length > 0 || dist.startsWith('-')) {
    console.error('usage: node scripts/build-info.ts DIST (the commit from $LEADERHOOK_REVISION, else git)');
    process.exit(2);
  }
  const fromEnv = process.env.LEADERHOOK_REVISION;
  writeBuildInfo(dist, fromEnv ?? gitRevision(import.meta.dirname));
}
