import { UsageError, type FlagValues } from '../flags.ts';
import { createLineLogger } from '../line-log.ts';
import { type ReleaseProcessOptions, idleUntilSignal, startReleaseProcess } from '../releaser/main.ts';

/** Turns the release flags into the hook's options; the downward-API identity is required. */
export function releaseOptionsFromFlags(values: FlagValues): ReleaseProcessOptions {
  const missing = (['pod-name', 'pod-namespace', 'pod-uid'] as const).filter((flag) => !values[flag]);
  if (missing.length > 0) {
    throw new UsageError(
      `${missing.map((f) => `--${f}`).join(', ')} missing: the webhook injects POD_NAME, POD_NAMESPACE and POD_UID from the downward API; set them when running the hook by hand`,
    );
  }
  const options: ReleaseProcessOptions = {
    podName: values['pod-name'] as string,
    podNamespace: values['pod-namespace'] as string,
    podUid: values['pod-uid'] as string,
    marginSeconds: values.margin as number,
    observe: values.observe === true,
    releaseTimeoutMs: values['release-timeout'] as number,
    waitReportIntervalSeconds: values['wait-report-interval'] as number,
  };
  if (values['lock-name']) options.lockName = values['lock-name'] as string;
  if (values.kubeconfig) options.kubeconfig = values.kubeconfig as string;
  if (values['metrics-port']) options.metricsPort = values['metrics-port'] as number;
  return options;
}

/**
 * Starts the hook and returns; the process then lives on its watch and exits
 * 0 on SIGTERM. A hook that cannot start logs why and idles until SIGTERM: a
 * crash-looping sidecar would only add noise to the operator's pod, and the
 * garbage collector remains the fallback.
 */
export async function runReleaseCommand(values: FlagValues): Promise<void> {
  const logger = createLineLogger('release-hook');
  try {
    await startReleaseProcess({ ...releaseOptionsFromFlags(values), logger });
  } catch (error) {
    logger.error({ err: error }, 'release hook cannot start; idling until SIGTERM (garbage collection remains the fallback)');
    idleUntilSignal();
  }
}
