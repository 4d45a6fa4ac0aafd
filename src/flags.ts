/**
 * Command-line flags that can also be set by environment variables (flags
 * win), with one table per command that serves parsing, validation and
 * `--help` alike. Built on node:util parseArgs: no dependency, and nothing
 * loaded that the release hook would carry into every operator pod.
 */
import { parseArgs } from 'node:util';

export type FlagKind = 'string' | 'boolean' | 'seconds' | 'milliseconds' | 'integer';

export interface FlagSpec {
  readonly name: string;
  /** A one-letter alias, as kubectl's -f for --filename. */
  readonly short?: string;
  readonly kind: FlagKind;
  readonly env: string;
  readonly default?: string;
  /** The only values a string flag takes, e.g. `text` and `json` for --output; anything else is a UsageError. */
  readonly choices?: readonly string[];
  readonly help: string;
}

/** What a flag of this spec parses to: a boolean, a number (durations in the kind's unit, integers), one of its choices, or a string. */
type KindValue<F extends FlagSpec> = F['kind'] extends 'boolean'
  ? boolean
  : F['kind'] extends 'string'
    ? F extends { readonly choices: readonly string[] }
      ? F['choices'][number]
      : string
    : number;

/** A flag with a default always has a value; one without is undefined when neither the command line nor the environment sets it. */
type FlagValue<F extends FlagSpec> = F extends { readonly default: string } ? KindValue<F> : KindValue<F> | undefined;

/** The names of a table's flags. */
export type FlagName<S extends readonly FlagSpec[]> = S[number]['name'];

/** The parsed values of a table's flags, each typed by its spec: `values.margin` is a number, `values.output` 'text' | 'json'. */
export type FlagValues<S extends readonly FlagSpec[]> = { readonly [F in S[number] as F['name']]: FlagValue<F> };

/** What parseFlags returns for a command. */
export interface ParsedFlags<S extends readonly FlagSpec[]> {
  /** Each flag's value: from the command line, else from its environment variable, else its default. */
  readonly values: FlagValues<S>;
  /** The flags the command line or the environment set, as opposed to those left at their default. */
  readonly set: ReadonlySet<FlagName<S>>;
  /** --help was given. */
  readonly help: boolean;
}

/**
 * A command's flag table. Each flag keeps its literal name, kind and default
 * (as `as const` would), so the values parseFlags returns are typed per flag,
 * and every entry still reads as a FlagSpec.
 */
export function flagTable<const S extends readonly FlagSpec[]>(specs: S): FlagTable<S> {
  // Each entry is a FlagSpec already; the intersection lets a lookup (`find`) read any entry's optional fields.
  return specs as FlagTable<S>;
}

type FlagTable<S extends readonly FlagSpec[]> = { readonly [K in keyof S]: S[K] & FlagSpec };

export class UsageError extends Error {}

/** A duration like "1500ms", "2s", "1m" or a bare number of the flag's unit. */
function parseDuration(flag: FlagSpec, raw: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  if (!match) throw new UsageError(`--${flag.name}: "${raw}" is not a duration (examples: 1500ms, 2s, 1m)`);
  const value = Number(match[1]);
  const unit = match[2] ?? (flag.kind === 'seconds' ? 's' : 'ms');
  const ms = unit === 'ms' ? value : unit === 's' ? value * 1000 : value * 60_000;
  return flag.kind === 'seconds' ? ms / 1000 : ms;
}

function convert(flag: FlagSpec, raw: string | boolean, source: string): string | boolean | number {
  switch (flag.kind) {
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (/^(true|1|yes)$/i.test(raw)) return true;
      if (/^(false|0|no|)$/i.test(raw)) return false;
      throw new UsageError(`${source}: "${raw}" is not true or false`);
    case 'integer': {
      const text = String(raw);
      if (!/^\d+$/.test(text)) throw new UsageError(`${source}: "${text}" is not a whole number`);
      return Number(text);
    }
    case 'seconds':
    case 'milliseconds':
      return parseDuration(flag, String(raw));
    default: {
      const text = String(raw);
      if (flag.choices && !flag.choices.includes(text)) throw new UsageError(`${source}: "${text}" is not one of ${flag.choices.join(', ')}`);
      return text;
    }
  }
}

export function parseFlags<const S extends readonly FlagSpec[]>(specs: S, argv: string[], env: NodeJS.ProcessEnv): ParsedFlags<S> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean' } };
  for (const spec of specs) {
    options[spec.name] = { type: spec.kind === 'boolean' ? 'boolean' : 'string', ...(spec.short ? { short: spec.short } : {}) };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: false, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const values: Record<string, string | boolean | number> = {};
  const set = new Set<FlagName<S>>();
  for (const spec of specs as readonly S[number][]) {
    const fromFlag = parsed.values[spec.name];
    const fromEnv = env[spec.env];
    // Never a list: no option is declared `multiple`.
    if (fromFlag !== undefined && !Array.isArray(fromFlag)) {
      values[spec.name] = convert(spec, fromFlag, `--${spec.name}`);
      set.add(spec.name);
    } else if (fromEnv !== undefined && fromEnv !== '') {
      values[spec.name] = convert(spec, fromEnv, `$${spec.env}`);
      set.add(spec.name);
    } else if (spec.default !== undefined) values[spec.name] = convert(spec, spec.default, `default of --${spec.name}`);
  }
  // The one place values meet their types: convert gives each flag the value its kind says.
  return { values: values as FlagValues<S>, set, help: parsed.values.help === true };
}

export function usage(command: string, summary: string, specs: readonly FlagSpec[]): string {
  const rows = specs.map((s) => {
    const value = s.kind === 'boolean' ? '' : ` <${s.choices ? s.choices.join('|') : s.kind === 'string' ? 'value' : s.kind}>`;
    const def = s.default !== undefined && s.default !== '' ? ` (default ${s.default})` : '';
    return `  ${s.short ? `-${s.short}, ` : ''}--${s.name}${value}\n      ${s.help}${def}\n      env: ${s.env}`;
  });
  return `Usage: leaderhook ${command} [flags]\n\n${summary}\n\nFlags:\n${rows.join('\n')}\n  --help\n      show this help\n`;
}

/** Markdown table of a command's flags, for docs/reference.md. */
export function markdownTable(specs: readonly FlagSpec[]): string {
  const lines = ['| flag | env | default | meaning |', '| --- | --- | --- | --- |'];
  for (const s of specs) {
    const flag = `${s.short ? `\`-${s.short}\`, ` : ''}\`--${s.name}\``;
    lines.push(`| ${flag} | \`${s.env}\` | ${s.default ? `\`${s.default}\`` : ''} | ${s.help} |`);
  }
  return lines.join('\n');
}
