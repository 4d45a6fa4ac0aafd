/**
 * Writes the flag tables of docs/reference.md from the tables the CLI parses
 * with, so the documentation cannot drift: `node scripts/reference-flags.ts`
 * rewrites, `--check` only reports (the unit tests run it).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { checkFlags, injectFlags, releaseFlags, versionFlags, webhookFlags } from '../src/commands/flags.ts';
import { markdownTable } from '../src/flags.ts';

const referencePath = new URL('../docs/reference.md', import.meta.url);

export function renderReference(reference: string): string {
  let out = reference;
  for (const [name, specs] of [
    ['webhook', webhookFlags],
    ['release', releaseFlags],
    ['inject', injectFlags],
    ['check', checkFlags],
    ['version', versionFlags],
  ] as const) {
    const begin = `<!-- flags:${name} -->`;
    const end = `<!-- /flags:${name} -->`;
    const from = out.indexOf(begin);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`docs/reference.md: markers ${begin} ... ${end} are missing`);
    out = `${out.slice(0, from + begin.length)}\n${markdownTable(specs)}\n${out.slice(to)}`;
  }
  return out;
}

if (import.meta.main) {
  const reference = readFileSync(referencePath, 'utf8');
  const rendered = renderReference(reference);
  if (process.argv.includes('--check')) {
    if (rendered !== reference) {
      console.error('docs/reference.md flag tables are out of date: run node scripts/reference-flags.ts');
      process.exit(1);
    }
  } else {
    writeFileSync(referencePath, rendered);
  }
}
