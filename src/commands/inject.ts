import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { type ParsedFlags, UsageError } from '../flags.ts';
import type { InjectionSettings } from '../injector/index.ts';
import { injectManifests, ManifestError } from '../injector/manifests.ts';
import type { injectFlags } from './flags.ts';
import { injectionSettingsFromFlags } from './injection-settings.ts';

/** What `leaderhook inject` prints, and how it exits. */
export interface InjectOutcome {
  stdout: string;
  stderr: string;
  exitCode: 0 | 1;
}

/**
 * The injected manifests on stdout and the injector's warnings on stderr;
 * for bad input, an error naming the document on stderr, exit 1 and nothing
 * on stdout: a pipeline must never apply half a stream.
 */
export function injectOutcome(manifests: string, source: string, settings: InjectionSettings): InjectOutcome {
  try {
    const { output, warnings } = injectManifests(manifests, settings);
    return { stdout: output, stderr: warnings.map((w) => `Warning: ${w}\n`).join(''), exitCode: 0 };
  } catch (error) {
    if (!(error instanceof ManifestError)) throw error;
    return { stdout: '', stderr: `leaderhook inject: ${source}: ${error.message}\n`, exitCode: 1 };
  }
}

/** `leaderhook inject -f FILE`: the injector offline, with the webhook's settings flags (`-f -` reads stdin). */
export async function runInjectCommand({ values }: ParsedFlags<typeof injectFlags>): Promise<number> {
  const file = values.filename;
  if (!file) throw new UsageError('-f/--filename is not set: name the manifest to inject, or - for stdin');
  const settings = injectionSettingsFromFlags(values);
  const source = file === '-' ? 'stdin' : file;
  let manifests: string;
  try {
    manifests = file === '-' ? await text(process.stdin) : await readFile(file, 'utf8');
  } catch (error) {
    process.stderr.write(`leaderhook inject: ${source}: cannot read it: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return 1;
  }
  const outcome = injectOutcome(manifests, source, settings);
  process.stderr.write(outcome.stderr);
  process.stdout.write(outcome.stdout);
  return outcome.exitCode;
}
