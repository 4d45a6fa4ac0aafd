import type { V1ResourceRequirements } from '@kubernetes/client-node';
import { UsageError, type FlagValues } from '../flags.ts';
import { type InjectionSettings, isResourceQuantity } from '../injector/index.ts';
import { createLogger } from '../log.ts';
import { version } from '../version.ts';
import { startWebhookServer } from '../webhook/server.ts';

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
/**
 * SIGTERM: fail /readyz for 2 s (endpoints catch up), stop accepting, give
 * in-flight reviews 6.5 s, and exit 0 within 10 s whatever happens.
 */
const SHUTDOWN_READINESS_DELAY_MS = 2_000;
const SHUTDOWN_IN_FLIGHT_MS = 6_500;
const SHUTDOWN_TIMEOUT_MS = 9_500;

function hookResources(values: FlagValues): V1ResourceRequirements {
  const pick = (flag: string): string | undefined => {
    const value = values[flag] as string | undefined;
    if (value === undefined || value === '') return undefined;
    if (!isResourceQuantity(value)) throw new UsageError(`--${flag}: "${value}" is not a resource quantity (for example 10m, 48Mi)`);
    return value;
  };
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  for (const [flag, bucket, resource] of [
    ['hook-cpu-request', requests, 'cpu'],
    ['hook-memory-request', requests, 'memory'],
    ['hook-cpu-limit', limits, 'cpu'],
    ['hook-memory-limit', limits, 'memory'],
  ] as const) {
    const value = pick(flag);
    if (value !== undefined) bucket[resource] = value;
  }
  return { ...(Object.keys(requests).length ? { requests } : {}), ...(Object.keys(limits).length ? { limits } : {}) };
}

/**
 * The image name deploy/ uses for both the webhook and the hook, untagged,
 * until kustomize's `images:` sets the real one for both.
 */
export const HOOK_IMAGE_PLACEHOLDER = 'leaderhook';

/** An image reference as the container runtime parses it: [host[:port]/]path[:tag][@sha256:hex]. */
const IMAGE_REFERENCE =
  /^(?:(?<host>[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d+)?)\/)?(?<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)(?::(?<tag>[\w][\w.-]{0,127}))?(?:@(?<digest>sha256:[a-f0-9]{64}))?$/;

/**
 * The hook image is part of every injected pod's start (a native sidecar is
 * an init container): one that cannot be pulled leaves operators at Init. So
 * the webhook refuses to start with no image, the deploy placeholder, a
 * malformed reference, or one without a tag or digest (an implicit :latest
 * can change under running operators). --dev alone may default it.
 */
export function checkHookImage(image: string | undefined, dev: boolean): string {
  if (!image) {
    if (dev) return `leaderhook:${version}`;
    throw new UsageError(
      "--hook-image is not set: it must name this webhook's own image (deploy/ sets it from the container's image through kustomize's images:)",
    );
  }
  if (image === HOOK_IMAGE_PLACEHOLDER) {
    throw new UsageError(
      `--hook-image is still the placeholder "${image}" of deploy/deployment.yaml: apply it with kustomize (kubectl apply -k deploy/), whose images: sets the webhook's image and the hook's together`,
    );
  }
  const match = IMAGE_REFERENCE.exec(image);
  if (!match) throw new UsageError(`--hook-image: "${image}" is not an image reference (for example registry.example.com/leaderhook:0.1.0)`);
  if (!match.groups?.tag && !match.groups?.digest) {
    throw new UsageError(`--hook-image: "${image}" has no tag or digest; an implicit :latest can change under running operators`);
  }
  return image;
}

/** Turns the webhook's flags into injection settings, refusing values that could only break pods. */
export function injectionSettingsFromFlags(values: FlagValues): InjectionSettings {
  const pullPolicy = values['hook-image-pull-policy'] as string;
  if (!(PULL_POLICIES as readonly string[]).includes(pullPolicy)) {
    throw new UsageError(`--hook-image-pull-policy: "${pullPolicy}" is not one of ${PULL_POLICIES.join(', ')}`);
  }
  const image = checkHookImage(values['hook-image'] as string | undefined, values.dev === true);
  const floor = Math.ceil(values['grace-period-floor'] as number);
  const cap = Math.floor(values['grace-period-cap'] as number);
  if (cap > 0 && cap < floor) throw new UsageError(`--grace-period-cap (${cap}s) is below --grace-period-floor (${floor}s)`);
  return {
    image,
    imagePullPolicy: pullPolicy as InjectionSettings['imagePullPolicy'],
    version,
    gracePeriodFloorSeconds: floor,
    ...(cap > 0 ? { gracePeriodCapSeconds: cap } : {}),
    resources: hookResources(values),
    observe: values.observe === true,
  };
}

function parseListen(listen: string): { host: string; port: number } {
  const match = /^(.*):(\d+)$/.exec(listen);
  const port = Number(match?.[2]);
  if (!match || port > 65535) throw new UsageError(`--listen: "${listen}" is not host:port`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

export async function runWebhookCommand(values: FlagValues): Promise<void> {
  const injection = injectionSettingsFromFlags(values);
  const dev = values.dev === true;
  const listenFlagSet = process.argv.some((a) => a.startsWith('--listen')) || process.env.LEADERHOOK_LISTEN;
  const { host, port } = parseListen(dev && !listenFlagSet ? '127.0.0.1:8443' : (values.listen as string));
  const certsDir = values['certs-dir'] as string;
  const logger = createLogger('webhook');
  const server = await startWebhookServer({
    host,
    port,
    dev,
    certsDir,
    certFile: dev ? `${certsDir}/tls.crt` : (values['tls-cert-file'] as string),
    keyFile: dev ? `${certsDir}/tls.key` : (values['tls-key-file'] as string),
    bodyLimitBytes: values['body-limit'] as number,
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
