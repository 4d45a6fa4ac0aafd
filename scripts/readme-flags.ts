/**
 * Writes the flag tables of README.md from the tables the CLI parses with, so
 * the documentation cannot drift: `node scripts/readme-flags.ts` rewrites,
 * `--check` only reports (the unit tests run it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { checkFlags, injectFlags, releaseFlags, webhookFlags } from '../src/commands/flags.ts';
import { markdownTable } from '../src/flags.ts';

const readmePath = new URL('../README.md', import.meta.url);

export function renderReadme(readme: string): string {
  let out = readme;
  for (const [name, specs] of [
    ['webhook', webhookFlags],
    ['release', releaseFlags],
    ['inject', injectFlags],
    ['check', checkFlags],
  ] as const) {
    const begin = `<!-- flags:${name} -->`;
    const end = `<!-- /flags:${name} -->`;
    const from = out.indexOf(begin);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`README.md: markers ${begin} ... ${end} are missing`);
    out = `${out.slice(0, from + begin.length)}\n${markdownTable(specs)}\n${out.slice(to)}`;
  }
  return out;
}

if (import.meta.main) {
  const readme = readFileSync(readmePath, 'utf8');
  const rendered = renderReadme(readme);
  if (process.argv.includes('--check')) {
    if (rendered !== readme) {
      console.error('README.md flag tables are out of date: run node scripts/readme-flags.ts');
      process.exit(1);
    }
  } else {
    writeFileSync(readmePath, rendered);
  }
}
