/**
 * Starts the webhook: certificates (created first in development mode), the
 * express app behind Node's https server, certificate reloading, and a
 * graceful close for SIGTERM that lets in-flight admissions finish.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { injectPod } from '../injector/index.ts';
import type { InjectionSettings } from '../injector/types.ts';
import { workloadWarnings } from '../injector/workloads.ts';
import type { Logger } from '../log.ts';
import { UserFacingError } from '../user-facing-error.ts';
import { createWebhookApp, type Injector, type WorkloadChecker } from './app.ts';
import { createWebhookMetrics, type WebhookMetrics } from './metrics.ts';
import { type CertificateSource, createCertificateSource } from './tls.ts';

export interface WebhookServerOptions {
  host: string;
  /** 0 picks a free port (tests); `address` tells which. */
  port: number;
  certFile: string;
  keyFile: string;
  /** Development mode: create `certsDir/{ca.crt,tls.crt,tls.key}` first when missing or unfit. */
  dev: boolean;
  certsDir: string;
  injection: InjectionSettings;
  bodyLimitBytes: number;
  logger: Logger;
  /** The injector; src/injector's injectPod unless a test replaces it. */
  inject?: Injector;
  /** The workload checker; src/injector/workloads.ts's workloadWarnings unless a test replaces it. */
  workloadWarnings?: WorkloadChecker;
  /** Names the development serving certificate covers; localhost, 127.0.0.1, ::1 and the Service names by default. */
  devHosts?: readonly string[];
  /** How often certificate files are re-read besides the directory watch; 0 turns the poll off. Default 5000. */
  certPollIntervalMs?: number;
  /**
   * Time between failing /readyz and closing the listener, so endpoints stop
   * sending admissions here before it refuses them. Default 0.
   */
  shutdownDelayMs?: number;
  /** In-flight requests still open this long after close() are cut. Default 8000 (the CLI must exit within 10 s). */
  shutdownTimeoutMs?: number;
}

export interface RunningWebhook {
  address: AddressInfo;
  /** https://host:port, with the IPv6 host bracketed. */
  url: string;
  metrics: WebhookMetrics;
  certificates: CertificateSource;
  /** Stops accepting, finishes in-flight requests, then resolves. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * How long the webhook keeps a connection the API server may still use:
 * longer than that client's idle timeout for webhook connections (90 s), so
 * the client, not the server, closes it, and a review is never written into
 * a connection the server is closing (Go's transport does not send a POST
 * again: the admission call would fail). Node times an idle connection by
 * keepAliveTimeout, and one that has sent no request yet (Go's transport
 * parks one it dialled for a review another connection served first) from
 * its opening by headersTimeout and requestTimeout, checked every 30 s:
 * with 10 s it closed such a connection 30 s after it opened (measured,
 * bench:webhook-connections). Longer header and request timeouts give a slow
 * client no more than keep-alive already does: a connection held 120 s
 * (docs/design.md#what-a-webhook-outage-costs).
 */
const CONNECTION_KEPT_MS = 120_000;

function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolvePromise, rejectPromise) => {
    const onError = (error: NodeJS.ErrnoException) => {
      rejectPromise(new UserFacingError(`listening on ${host}:${port}: ${error.code ?? error.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolvePromise(server.address() as AddressInfo);
    });
  });
}

export async function startWebhookServer(options: WebhookServerOptions): Promise<RunningWebhook> {
  const { host, port, certFile, keyFile, logger } = options;
  const metrics = createWebhookMetrics();

  if (options.dev) {
    // Loaded only here: selfsigned and its X.509 stack are ~200 modules and
    // ~15 MiB of memory that a webhook serving cert-manager's files never needs.
    const { DEFAULT_DEV_HOSTS, ensureDevCertificates } = await import('./devcerts.ts');
    const files = await ensureDevCertificates(options.certsDir, logger, options.devHosts ?? DEFAULT_DEV_HOSTS);
    if (resolve(files.certFile) !== resolve(certFile) || resolve(files.keyFile) !== resolve(keyFile)) {
      logger.warn(
        { devCertFile: files.certFile, devKeyFile: files.keyFile, certFile, keyFile },
        'development certificates were created, but the server loads other files',
      );
    }
  }

  let certificates: CertificateSource | undefined;
  let closing = false;
  const app = createWebhookApp({
    inject: options.inject ?? injectPod,
    workloadWarnings: options.workloadWarnings ?? workloadWarnings,
    injection: options.injection,
    logger,
    metrics,
    bodyLimitBytes: options.bodyLimitBytes,
    notReadyReason: () => {
      if (closing) return 'shutting down';
      if (certificates === undefined) return 'no serving certificate loaded yet';
      return undefined;
    },
    isClosing: () => closing,
  });

  certificates = await createCertificateSource({
    certFile,
    keyFile,
    logger,
    metrics,
    ...(options.certPollIntervalMs !== undefined ? { pollIntervalMs: options.certPollIntervalMs } : {}),
  });
  const pair = certificates.current();
  const server = createServer(
    {
      cert: pair.cert,
      key: pair.key,
      minVersion: 'TLSv1.2',
      keepAliveTimeout: CONNECTION_KEPT_MS,
      headersTimeout: CONNECTION_KEPT_MS,
      requestTimeout: CONNECTION_KEPT_MS,
    },
    app,
  );
  server.on('tlsClientError', (error, socket) => {
    logger.debug({ err: error, remoteAddress: socket.remoteAddress }, 'TLS handshake failed');
  });
  certificates.attach(server);

  let address: AddressInfo;
  try {
    address = await listen(server, host, port);
  } catch (error) {
    certificates.close();
    throw error;
  }
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  logger.info({ host: address.address, port: address.port, dev: options.dev }, 'webhook serving');

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      const delay = options.shutdownDelayMs ?? 0;
      logger.info({ delayMs: delay }, 'webhook shutting down');
      if (delay > 0) await new Promise((done) => setTimeout(done, delay));
      certificates.close();
      await new Promise<void>((done) => {
        const timeoutMs = options.shutdownTimeoutMs ?? 8000;
        const cut = setTimeout(() => {
          logger.warn({ timeoutMs }, 'requests still open at the shutdown deadline, closing their connections');
          server.closeAllConnections();
        }, timeoutMs);
        cut.unref();
        server.close(() => {
          clearTimeout(cut);
          done();
        });
        server.closeIdleConnections();
      });
      logger.info({}, 'webhook stopped');
    })();
    return closed;
  };

  return { address, url: `https://${urlHost}:${address.port}`, metrics, certificates, close };
}
