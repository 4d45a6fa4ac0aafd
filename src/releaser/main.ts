/**
 * Process wiring for the release hook: SIGTERM runs R1 and exits 0 — in every
 * case, since a non-zero exit of a native sidecar only adds noise to a pod
 * that is stopping anyway. `leaderhook release` (src/commands/release.ts)
 * turns flags and environment into these options.
 */
import { hostname } from 'node:os';
import { inClusterConfig, kubeconfigConfig } from '../kube/config.ts';
import { createKubeClient } from '../kube/client.ts';
import { createLineLogger, type Logger } from '../line-log.ts';
import { type ReleaserOptions, type RunningReleaser, runReleaser } from './releaser.ts';

export interface ReleaseProcessOptions extends Omit<ReleaserOptions, 'client' | 'logger'> {
  /** Use this kubeconfig instead of the pod's service account. */
  kubeconfig?: string;
  logger?: Logger;
}

/**
 * Builds the client (in-cluster, or from a kubeconfig), starts the hook and
 * installs the signal handlers. Resolves once the hook runs (not once it is
 * ready: the pod must not wait for the API server).
 */
export async function startReleaseProcess(options: ReleaseProcessOptions): Promise<RunningReleaser> {
  const logger = options.logger ?? createLineLogger('release-hook');
  const config = options.kubeconfig ? await kubeconfigConfig(options.kubeconfig) : inClusterConfig();
  const client = createKubeClient(config);
  const { kubeconfig: _k, logger: _l, ...rest } = options;
  const releaser = await runReleaser({ hostname: hostname(), ...rest, client, logger });
  installSignalHandlers(releaser, logger);
  return releaser;
}

/**
 * SIGTERM (and SIGINT, for a terminal): run onTerminate, then exit 0. A
 * second signal while the release runs changes nothing: onTerminate is
 * already bounded by releaseTimeoutMs. Stray errors are logged, never fatal:
 * a crash-looping hook would help no one.
 */
export function installSignalHandlers(releaser: RunningReleaser, logger: Logger, exit: (code: number) => void = process.exit): void {
  const onSignal = (signal: string) => {
    // onTerminate first: it notes the time of the signal, which R1 compares with the deadline
    const done = releaser.onTerminate();
    logger.info({ signal }, `${signal} received`);
    done.catch((err: unknown) => logger.error({ err }, 'SIGTERM handling failed')).finally(() => exit(0));
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  // through the err field: the logger writes an Error's type, message, cause and, on error lines, its stack
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception'));
}

/**
 * Keeps the process alive doing nothing until SIGTERM or SIGINT, then exits
 * 0. For a hook that cannot start (bad settings, no credentials): a
 * crash-looping sidecar would only add restarts and noise to the operator's
 * pod, and the garbage collector remains the fallback.
 */
export function idleUntilSignal(exit: (code: number) => void = process.exit): void {
  const idle = setInterval(() => {}, 1 << 30);
  const quit = () => {
    clearInterval(idle);
    exit(0);
  };
  process.once('SIGTERM', quit);
  process.once('SIGINT', quit);
}
