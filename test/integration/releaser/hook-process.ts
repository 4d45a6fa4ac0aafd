/**
 * The release hook as a separate process, as it runs in a pod: compiled
 * JavaScript (what the image ships, from compileLeaderhook) with the
 * downward-API env, authenticated as the pod's service account. Shared by the
 * process test and the hook benchmarks.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Pod } from '../../../src/kube/types.ts';
import { type LogLine, type TestNamespace, waitFor } from './harness.ts';

export interface HookProcess {
  process: ChildProcess;
  /** Every JSON log line so far. */
  lines: LogLine[];
  /** The hook's `ready` log line. */
  ready: Promise<LogLine>;
  /** Milliseconds from spawn to the `ready` line, once it came. */
  readyAfterMs: Promise<number>;
  exited: Promise<number | null>;
}

/**
 * Starts `leaderhook release` (the compiled `cli`) as pod `pod` of `ns`; `nodeArgs` go before the script, as on the container command;
 * `env` adds to the downward-API variables (LEADERHOOK_METRICS_PORT, as the injector sets it); `wrap` puts the command in
 * another that execs it (a memory cgroup's, so the PID stays the hook's).
 */
export function startHookProcess(
  cli: string,
  ns: TestNamespace,
  pod: Pod,
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
  wrap: (argv: string[]) => string[] = (argv) => argv,
): HookProcess {
  const started = performance.now();
  const [command, ...args] = wrap([process.execPath, ...nodeArgs, cli, 'release']) as [string, ...string[]];
  const child = spawn(command, args, {
    env: {
      PATH: process.env.PATH,
      POD_NAME: pod.metadata?.name,
      POD_NAMESPACE: ns.name,
      POD_UID: pod.metadata?.uid,
      LEADERHOOK_KUBECONFIG: ns.kubeconfig,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: LogLine[] = [];
  let buffer = '';
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as LogLine);
      } catch {
        lines.push({ level: 'raw', msg: line });
      }
      if (process.env.LEADERHOOK_TEST_VERBOSE) process.stderr.write(`${line}\n`);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = waitFor('hook ready', async () => lines.find((l) => /^ready/.test(l.msg)), 30_000, 5);
  const readyAfterMs = ready.then(() => performance.now() - started);
  return { process: child, lines, ready, readyAfterMs, exited };
}
