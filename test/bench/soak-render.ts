/**
 * Renders docs/soak.md again from a record that `npm run bench:soak` wrote:
 * after a change to the report's layout, without running the soak again.
 *
 *   node test/bench/soak-render.ts FILE.jsonl [--out docs/soak.md]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseSoakRecords } from './soak-analysis.ts';
import { writeSoakReport } from './soak-report.ts';

const usage = 'usage: node test/bench/soak-render.ts FILE.jsonl [--out docs/soak.md]';
const { values, positionals } = parseArgs({ options: { out: { type: 'string', default: 'docs/soak.md' } }, allowPositionals: true });
if (positionals.length !== 1) throw new Error(usage);
const file = positionals[0]!;
await writeSoakReport(parseSoakRecords(readFileSync(file, 'utf8')), values.out);
console.log(`wrote ${values.out} from ${file}`);
