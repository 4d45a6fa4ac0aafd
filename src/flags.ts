/**
 * Command-line flags that can also be set by environment variables (flags
 * win), with one table per command that serves parsing, validation and
 * `--help` alike. Built on node:util parseArgs: no dependency, and nothing
 * loaded that the release hook would carry into every operator pod.
 */
import { parseArgs } from 'node:util';

export type FlagKind = 'string' | 'boolean' | 'seconds' | 'milliseconds' | 'integer';

export interface FlagSpec {
  name: string;
  /** A one-letter alias, as kubectl's -f for --filename. */
  short?: string;
  kind: FlagKind;
  env: string;
  default?: string;
  /** The only values a string flag takes, e.g. `text` and `json` for --output; anything else is a UsageError. */
  choices?: readonly string[];
  help: string;
}

export type FlagValues = Record<string, string | boolean | number | undefined>;

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

export function parseFlags(specs: FlagSpec[], argv: string[], env: NodeJS.ProcessEnv): FlagValues {
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
  const values: FlagValues = { help: parsed.values.help === true };
  for (const spec of specs) {
    const fromFlag = parsed.values[spec.name];
    const fromEnv = env[spec.env];
    if (fromFlag !== undefined) values[spec.name] = convert(spec, fromFlag as string | boolean, `--${spec.name}`);
    else if (fromEnv !== undefined && fromEnv !== '') values[spec.name] = convert(spec, fromEnv, `$${spec.env}`);
    else if (spec.default !== undefined) values[spec.name] = convert(spec, spec.default, `default of --${spec.name}`);
  }
  return values;
}

export function usage(command: string, summary: string, specs: FlagSpec[]): string {
  const rows = specs.map((s) => {
    const value = s.kind === 'boolean' ? '' : ` <${s.choices ? s.choices.join('|') : s.kind === 'string' ? 'value' : s.kind}>`;
    const def = s.default !== undefined && s.default !== '' ? ` (default ${s.default})` : '';
    return `  ${s.short ? `-${s.short}, ` : ''}--${s.name}${value}\n      ${s.help}${def}\n      env: ${s.env}`;
  });
  return `Usage: leaderhook ${command} [flags]\n\n${summary}\n\nFlags:\n${rows.join('\n')}\n  --help\n      show this help\n`;
}

/** Markdown table of a command's flags, for the README. */
export function markdownTable(specs: FlagSpec[]): string {
  const lines = ['| flag | env | default | meaning |', '| --- | --- | --- | --- |'];
  for (const s of specs) {
    const flag = `${s.short ? `\`-${s.short}\`, ` : ''}\`--${s.name}\``;
    lines.push(`| ${flag} | \`${s.env}\` | ${s.default ? `\`${s.default}\`` : ''} | ${s.help} |`);
  }
  return lines.join('\n');
}
