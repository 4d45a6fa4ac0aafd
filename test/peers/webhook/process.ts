/**
 * Builds and starts the Go peer (test/peers/webhook, an idiomatic
 * controller-runtime webhook doing leaderhook's mutation) as a process on
 * 127.0.0.1, for the equality test beside this file and the benchmark in
 * test/bench. The binary goes to a scratch directory, never into the tree.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import type { InjectionSettings } from '../../../src/injector/types.ts';

const moduleDir = new URL('.', import.meta.url).pathname;

/** `go build` of the peer into `outDir`; returns the binary. Minutes on a cold cache, seconds on a warm one. */
export async function buildPeer(outDir: string): Promise<string> {
  const binary = `${outDir}/leaderhook-peer-webhook`;
  try {
    await promisify(execFile)('go', ['build', '-o', binary, '.'], { cwd: moduleDir, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`building the Go peer in ${moduleDir}: ${stderr || message}`);
  }
  return binary;
}

/** The peer's flags for leaderhook's injection settings (main.go's defaults are the golden settings; every flag is passed anyway). */
export function peerFlags(settings: InjectionSettings): string[] {
  const { requests = {}, limits = {} } = settings.resources;
  return [
    `--hook-image=${settings.image}`,
    `--hook-image-pull-policy=${settings.imagePullPolicy}`,
    `--version=${settings.version}`,
    `--grace-period-floor=${settings.gracePeriodFloorSeconds}`,
    `--grace-period-cap=${settings.gracePeriodCapSeconds ?? 0}`,
    `--hook-cpu-request=${requests.cpu ?? ''}`,
    `--hook-memory-request=${requests.memory ?? ''}`,
    `--hook-cpu-limit=${limits.cpu ?? ''}`,
    `--hook-memory-limit=${limits.memory ?? ''}`,
    `--observe=${settings.observe}`,
  ];
}

/** A port nothing listens on right now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once a TLS handshake with 127.0.0.1:port, trusting `ca`, succeeds; rejects after `timeoutMs` or when `child` exits. */
export async function waitForTls(port: number, ca: string | Buffer, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before serving on port ${port}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, ca }, () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing served TLS on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  /** SIGTERM to this process (by its pid), SIGKILL after 5 s; resolves once it exited. */
  stop(): Promise<void>;
}

/** Stops a child by its pid: SIGTERM, then SIGKILL after `graceMs`. */
export function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface StartOptions {
  certFile: string;
  keyFile: string;
  ca: string | Buffer;
  settings: InjectionSettings;
  /** `taskset -c <cpus>` in front of the command, e.g. "1". */
  cpus?: string;
  /** Where its log lines go; /dev/null unless a test or benchmark wants to read them ('pipe': from `child.stdout`). */
  stdio?: 'ignore' | 'inherit' | 'pipe';
}

/** Starts a server command on a free port of 127.0.0.1 and waits until it serves TLS. */
export async function startServerProcess(
  command: string,
  args: (port: number) => string[],
  options: StartOptions & { env?: NodeJS.ProcessEnv },
): Promise<ServerProcess> {
  const port = await freePort();
  const argv = options.cpus === undefined ? [command, ...args(port)] : ['taskset', '-c', options.cpus, command, ...args(port)];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', options.stdio ?? 'ignore', options.stdio ?? 'ignore'], env: options.env ?? process.env });
  try {
    await waitForTls(port, options.ca, child);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { child, pid: child.pid!, url: `https://127.0.0.1:${port}`, stop: () => stopChild(child) };
}

/** Starts the peer binary with `settings` and the given serving certificate. */
export function startPeer(binary: string, options: StartOptions): Promise<ServerProcess> {
  return startServerProcess(
    binary,
    (port) => [
      '--host=127.0.0.1',
      `--port=${port}`,
      `--tls-cert-file=${options.certFile}`,
      `--tls-key-file=${options.keyFile}`,
      ...peerFlags(options.settings),
    ],
    options,
  );
}
