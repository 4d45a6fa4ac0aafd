/**
 * Renders a fault report again from a record that `npm run bench:faults`
 * wrote: after a change to the report's layout, or for a run of some
 * scenarios only (the multi-node ones: docs/faults-multinode.md).
 *
 *   node test/bench/faults-render.ts FILE.jsonl [--out docs/faults.md]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseFaultRecords } from './fault-trials.ts';
import { writeFaultsReport } from './faults-report.ts';

const usage = 'usage: node test/bench/faults-render.ts FILE.jsonl [--out docs/faults.md]';
const { values, positionals } = parseArgs({ options: { out: { type: 'string', default: 'docs/faults.md' } }, allowPositionals: true });
if (positionals.length !== 1) throw new Error(usage);
const file = positionals[0]!;
await writeFaultsReport(parseFaultRecords(readFileSync(file, 'utf8')), values.out);
console.log(`wrote ${values.out} from ${file}`);
