/**
 * The command line of a benchmark whose options are whole numbers and a
 * `--json FILE` for its record: `--help` prints the usage and exits; a bad
 * number, a record file that exists or a folder that does not throws, naming the option, before
 * anything is created on the cluster.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';

export interface WholeNumberOption {
  default: number;
  min: number;
}

export function parseBenchArgs<K extends string>(
  usage: string,
  numbers: Record<K, WholeNumberOption>,
  argv: readonly string[] = process.argv.slice(2),
): Record<K, number> & { json?: string } {
  const names = Object.keys(numbers) as K[];
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...Object.fromEntries(names.map((name) => [name, { type: 'string' as const }])),
      json: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const given = values as Record<string, string | boolean | undefined>;
  const parsed = {} as Record<K, number>;
  for (const name of names) {
    const text = given[name] as string | undefined;
    const { default: fallback, min } = numbers[name];
    const n = text === undefined ? fallback : Number(text);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${text}\n${usage}`);
    parsed[name] = n;
  }
  const json = values.json as string | undefined;
  if (json !== undefined && existsSync(json)) throw new Error(`--json ${json} exists: give a new file`);
  // the record is written at the end of a run of minutes: a folder that is not there fails now, not then
  if (json !== undefined && !existsSync(dirname(json))) throw new Error(`--json ${json}: folder ${dirname(json)} does not exist`);
  return json === undefined ? parsed : { ...parsed, json };
}
