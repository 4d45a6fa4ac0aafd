#!/usr/bin/env node
/**
 * leaderhook: one binary, one image, two roles.
 *   leaderhook webhook   the mutating admission webhook
 *   leaderhook release   the release hook, run as a native sidecar in operator pods
 *   leaderhook inject    the webhook's injection, offline, on manifests (GitOps)
 *   leaderhook check     is leaderhook installed and working in this cluster?
 *   leaderhook version   print the version and the commit
 * Each command loads only its own modules, so the hook never carries the
 * webhook's HTTP stack, nor the tools' modules, into operator pods. The npm
 * package holds only the tools (check, inject, version): the webhook and the
 * hook run from the image.
 */
import { inspect } from 'node:util';
import { checkFlags, injectFlags, releaseFlags, versionFlags, webhookFlags } from './commands/flags.ts';
import { parseFlags, UsageError, usage, type FlagSpec, type ParsedFlags } from './flags.ts';
import { unsupportedNode } from './node-support.ts';
import { UserFacingError } from './user-facing-error.ts';

/**
 * A command's module, or, where this install left it out (the npm package has
 * no webhook or release), an error that says so instead of the resolver's.
 */
async function commandModule<T>(name: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const { code, url } = error as { code?: string; url?: string };
    if (code === 'ERR_MODULE_NOT_FOUND' && url !== undefined && new URL(url).pathname.endsWith(`/commands/${name}.js`)) {
      throw new UserFacingError(`this install has no ${name} command: the npm package holds check, inject and version; ${name} runs from the leaderhook image`);
    }
    throw error;
  }
}

interface Command {
  summary: string;
  flags: readonly FlagSpec[];
  /** Parses the command's flags (a UsageError when they are wrong): whether --help was given, and the command to run with them. */
  parse(argv: string[], env: NodeJS.ProcessEnv): { help: boolean; run: () => Promise<unknown> };
}

/** A command whose run receives its own flags, typed by its table. */
function command<const S extends readonly FlagSpec[]>(summary: string, flags: S, run: (flags: ParsedFlags<S>) => Promise<unknown>): Command {
  return {
    summary,
    flags,
    parse: (argv, env) => {
      const parsed = parseFlags(flags, argv, env);
      return { help: parsed.help, run: () => run(parsed) };
    },
  };
}

/** A command's run resolves to its exit code; to anything else (nothing) for 0. */
const commands: Record<string, Command> = {
  webhook: command('Serve the mutating admission webhook that injects the release hook into pods of opted-in namespaces.', webhookFlags, async (flags) =>
    (await commandModule('webhook', () => import('./commands/webhook.ts'))).runWebhookCommand(flags),
  ),
  release: command(
    "Run the release hook: free this pod's leader lock once the operator has provably stopped, and locks whose holder can never run again.",
    releaseFlags,
    async (flags) => (await commandModule('release', () => import('./commands/release.ts'))).runReleaseCommand(flags),
  ),
  inject: command(
    'Inject the release hook into the Pods and workloads of manifests, as the webhook would, and print them (for GitOps).',
    injectFlags,
    async (flags) => (await import('./commands/inject.ts')).runInjectCommand(flags),
  ),
  check: command('Check that leaderhook is installed and working: one line per check (or JSON), exit 1 when any fails.', checkFlags, async (flags) =>
    (await import('./commands/check.ts')).runCheckCommand(flags),
  ),
  version: command('Print the version and the commit it was built from.', versionFlags, async (flags) =>
    (await import('./commands/version.ts')).runVersionCommand(flags),
  ),
};

function topUsage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(9)}${c.summary}`);
  return `Usage: leaderhook <command> [flags]\n\nCommands:\n${rows.join('\n')}\n\nRun 'leaderhook <command> --help' for a command's flags. Every flag can also be set by the environment variable its help names.\n`;
}

async function main(argv: string[]): Promise<number> {
  // The npm package runs on the user's Node.js: an older one would fail deep
  // inside a command, on an API it lacks.
  const tooOld = unsupportedNode();
  if (tooOld) {
    process.stderr.write(`leaderhook: ${tooOld}\n`);
    return 1;
  }
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(topUsage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') return main(['version']);
  const command = commands[name];
  if (!command) {
    process.stderr.write(`leaderhook: unknown command "${name}"\n\n${topUsage()}`);
    return 2;
  }
  let parsed: ReturnType<Command['parse']>;
  try {
    parsed = command.parse(rest, process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`leaderhook ${name}: ${error.message}\n\n${usage(name, command.summary, command.flags)}`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(usage(name, command.summary, command.flags));
    return 0;
  }
  try {
    const code = await parsed.run();
    return typeof code === 'number' ? code : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`leaderhook ${name}: ${error.message}\n`);
      return 2;
    }
    // A command that cannot start (a certificate it cannot read, a port in use)
    // says why in one line: its UserFacingErrors carry their context, and a
    // stack trace would bury that line in the pod's log. Anything else is a
    // bug, and its stack and causes are what find it.
    const report = error instanceof UserFacingError ? error.message : inspect(error);
    process.stderr.write(`leaderhook ${name}: ${report}\n`);
    return 1;
  }
}

const exitCode = await main(process.argv.slice(2));
if (exitCode !== 0) process.exitCode = exitCode;
