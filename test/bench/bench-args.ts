/**
 * The command line of a benchmark whose options are whole numbers (or lists
 * of them, `--leases 0,10,50`), or text passed through as it is (`--node-flags
 * '--optimize-for-size'`), and a `--json FILE` for its record: `--help`
 * prints the usage and exits; a bad number, a record file that exists or a
 * folder that does not throws, naming the option, before anything is created
 * on the cluster; optionsOrExit turns that into a tool's answer.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';

export interface WholeNumberOption {
  default: number;
  min: number;
}

/** An option that takes one whole number or several, comma-separated. */
export interface WholeNumberListOption {
  default: number[];
  min: number;
}

/** An option whose value is taken as it is written (a benchmark checks its meaning). */
export interface TextOption {
  default: string;
}

type BenchOption = WholeNumberOption | WholeNumberListOption | TextOption;

type ParsedNumbers<N> = { [P in keyof N]: N[P] extends WholeNumberListOption ? number[] : N[P] extends TextOption ? string : number };

/** `text` (`"0,10,50"`) as whole numbers of at least `min`; throws naming `--flag`, with the usage, for anything else. */
export function wholeNumberList(flag: string, text: string, min: number, usage: string): number[] {
  const numbers = text.split(',').map((s) => (s.trim() === '' ? Number.NaN : Number(s)));
  if (numbers.some((n) => !Number.isInteger(n) || n < min)) throw new Error(`--${flag} must list whole numbers of at least ${min}, got ${text}\n${usage}`);
  return numbers;
}

export function parseBenchArgs<N extends Record<string, BenchOption>>(
  usage: string,
  numbers: N,
  argv: readonly string[] = process.argv.slice(2),
): ParsedNumbers<N> & { json?: string } {
  const names = Object.keys(numbers) as (keyof N & string)[];
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
  const parsed = {} as Record<string, number | number[] | string>;
  for (const name of names) {
    const text = given[name] as string | undefined;
    const option = numbers[name] as BenchOption;
    if (typeof option.default === 'string') {
      parsed[name] = text ?? option.default;
      continue;
    }
    if (Array.isArray(option.default)) {
      parsed[name] = text === undefined ? option.default : wholeNumberList(name, text, (option as WholeNumberListOption).min, usage);
      continue;
    }
    const { default: fallback, min } = option as WholeNumberOption;
    const n = text === undefined ? fallback : Number(text);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${text}\n${usage}`);
    parsed[name] = n;
  }
  const json = values.json as string | undefined;
  if (json !== undefined && existsSync(json)) throw new Error(`--json ${json} exists: give a new file`);
  // the record is written at the end of a run of minutes: a folder that is not there fails now, not then
  if (json !== undefined && !existsSync(dirname(json))) throw new Error(`--json ${json}: folder ${dirname(json)} does not exist`);
  const result = parsed as ParsedNumbers<N>;
  return json === undefined ? result : { ...result, json };
}

/**
 * A benchmark's options, parsed before it touches a cluster: a bad one is
 * answered as a command-line tool answers, with the message, the usage where
 * the message does not carry it already, and exit status 2; not with a stack.
 */
export function optionsOrExit<T>(bench: string, usage: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const message = (error as Error).message;
    process.stderr.write(`${bench}: ${message}\n${message.includes(usage) ? '' : `\n${usage}`}`);
    process.exit(2);
  }
}
