/**
 * Renders docs/failover.md and docs/failover.svg again from a record that
 * `npm run bench:failover` wrote, e.g. after a change to the report's layout:
 *
 *   node test/bench/failover-render.ts FILE.jsonl [--out-dir docs]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { writeReport } from './failover-report.ts';
import { parseRecords } from './failover-trials.ts';

const usage = 'usage: node test/bench/failover-render.ts FILE.jsonl [--out-dir docs]';
const { values, positionals } = parseArgs({ options: { 'out-dir': { type: 'string', default: 'docs' } }, allowPositionals: true });
if (positionals.length !== 1) throw new Error(usage);
const file = positionals[0]!;
const records = parseRecords(readFileSync(file, 'utf8'));
for (const path of await writeReport(records, values['out-dir'])) console.log(`wrote ${path} from ${file}`);
