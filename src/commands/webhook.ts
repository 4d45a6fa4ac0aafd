import { type ParsedFlags, UsageError } from '../flags.ts';
import { createLogger } from '../log.ts';
import { version } from '../version.ts';
import { startWebhookServer } from '../webhook/server.ts';
import type { webhookFlags } from './flags.ts';
import { injectionSettingsFromFlags } from './injection-settings.ts';

/**
 * SIGTERM: fail /readyz for 2 s (endpoints catch up), stop accepting, give
 * in-flight reviews 6.5 s, and exit 0 within 10 s whatever happens.
 */
const SHUTDOWN_READINESS_DELAY_MS = 2_000;
const SHUTDOWN_IN_FLIGHT_MS = 6_500;
const SHUTDOWN_TIMEOUT_MS = 9_500;

function parseListen(listen: string): { host: string; port: number } {
  const match = /^(.*):(\d+)$/.exec(listen);
  const port = Number(match?.[2]);
  if (!match || port > 65535) throw new UsageError(`--listen: "${listen}" is not host:port`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

export async function runWebhookCommand({ values, set }: ParsedFlags<typeof webhookFlags>): Promise<void> {
  const dev = values.dev;
  const injection = injectionSettingsFromFlags(values, dev);
  // --dev serves on loopback unless --listen (or its variable) says otherwise.
  const { host, port } = parseListen(dev && !set.has('listen') ? '127.0.0.1:8443' : values.listen);
  const certsDir = values['certs-dir'];
  const logger = createLogger('webhook');
  const server = await startWebhookServer({
    host,
    port,
    dev,
    certsDir,
    certFile: dev ? `${certsDir}/tls.crt` : values['tls-cert-file'],
    keyFile: dev ? `${certsDir}/tls.key` : values['tls-key-file'],
    bodyLimitBytes: values['body-limit'],
    // In a cluster, /readyz fails first so endpoints stop sending reviews here
    // before the listener closes; the remaining budget finishes in-flight ones.
    shutdownDelayMs: dev ? 0 : SHUTDOWN_READINESS_DELAY_MS,
    shutdownTimeoutMs: SHUTDOWN_IN_FLIGHT_MS,
    injection,
    logger,
  });
  logger.info({ version, injection }, 'injection settings');

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down: no new connections, finishing in-flight reviews');
      const deadline = setTimeout(() => {
        logger.warn({ timeoutMs: SHUTDOWN_TIMEOUT_MS }, 'in-flight reviews did not finish in time; exiting anyway');
        resolve();
      }, SHUTDOWN_TIMEOUT_MS);
      deadline.unref();
      server.close().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'error while shutting down');
        resolve();
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  logger.flush();
  process.exit(0);
}
