/**
 * The leaderhook CLI (src/cli.ts) as a user runs it: a child process on this
 * Node, whose output and exit the tests read; or, with `command`, another
 * leaderhook executable (the npm package's, installed).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const cli = path.join(import.meta.dirname, '../../src/cli.ts');

/**
 * Every command the unit tests run exits on its own within seconds; one still
 * running this long is a regression (a server that started), not a slow machine.
 */
const DEFAULT_TIMEOUT_MS = 20_000;

export interface CliOptions {
  /** Set over this process's environment; '' counts as unset, so it hides a developer's own setting. */
  env?: NodeJS.ProcessEnv;
  /** How long it may run before it is killed (by its PID) and the run rejects; default 20 s. */
  timeoutMs?: number;
  /** Written to its stdin, which then ends; without it, stdin ends at once. */
  stdin?: string;
  /** The executable to run with ARGS instead of this Node on src/cli.ts. */
  command?: string;
  /** Its working directory; default this process's. */
  cwd?: string;
}

export interface CliExit {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `leaderhook ARGS…` and resolves once it has exited and closed its output. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliExit> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const [file, argv] = options.command ? [options.command, [...args]] : [process.execPath, [cli, ...args]];
    const child = spawn(file, argv, {
      env: { ...process.env, ...options.env },
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(options.stdin ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      if (child.pid !== undefined) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          // It exited in the meantime.
        }
      }
      reject(new Error(`leaderhook ${args.join(' ')} did not exit within ${timeoutMs} ms; killed PID ${child.pid}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}
