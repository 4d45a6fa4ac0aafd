/**
 * The golden cases of `leaderhook inject`, test/testdata/inject-cli: every
 * NAME.yaml is a case (a manifest stream), NAME.stdout.yaml and
 * NAME.stderr.txt beside it what the command prints, an optional NAME.flags
 * its flags, one a line (default: only --hook-image). `bad-*` cases must fail.
 * The unit tests check them against the injector; the release test against
 * the installed npm package.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { goldenSettings } from './injection-settings.ts';

export const injectCliDir = path.join(import.meta.dirname, '../testdata/inject-cli');
export const STDOUT = '.stdout.yaml';
export const STDERR = '.stderr.txt';
export const FLAGS = '.flags';

export const injectCliCases: string[] = readdirSync(injectCliDir)
  .filter((f) => f.endsWith('.yaml') && !f.endsWith(STDOUT))
  .map((f) => f.slice(0, -'.yaml'.length))
  .sort();

/** The flags case `name` runs with. */
export function injectCliFlags(name: string): string[] {
  const file = path.join(injectCliDir, `${name}${FLAGS}`);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [`--hook-image=${goldenSettings.image}`];
}
