import { type FlagValues, type ParsedFlags, UsageError } from '../flags.ts';
import { createLineLogger } from '../line-log.ts';
import { type ReleaseProcessOptions, idleUntilSignal, startReleaseProcess } from '../releaser/main.ts';
import { DEFAULT_GRACE_PERIOD_FLOOR_SECONDS, type releaseFlags } from './flags.ts';

type ReleaseFlagValues = FlagValues<typeof releaseFlags>;

/**
 * Refuses settings under which the hook could never do its work. A SIGTERM
 * comes at most a grace period before the deletion deadline, so a margin of
 * the whole grace period or more means R1 never releases.
 */
function checkReleaseFlags(values: ReleaseFlagValues): void {
  const margin = values.margin;
  const floor = DEFAULT_GRACE_PERIOD_FLOOR_SECONDS;
  if (!(margin < floor)) {
    throw new UsageError(
      `--margin (${margin}s) is not below the webhook's default --grace-period-floor (${floor}s): R1 would never release in a pod with that grace period`,
    );
  }
  if (!(values['release-timeout'] > 0)) {
    throw new UsageError('--release-timeout is 0: every release on SIGTERM would give up before it starts');
  }
  if (!(values['wait-report-interval'] > 0)) {
    throw new UsageError('--wait-report-interval is 0: a standby would re-read its holders without pause');
  }
}

/**
 * Turns the release flags into the hook's options. The downward-API identity
 * is checked where every caller passes, by runReleaser.
 */
export function releaseOptionsFromFlags(values: ReleaseFlagValues): ReleaseProcessOptions {
  checkReleaseFlags(values);
  const options: ReleaseProcessOptions = {
    podName: values['pod-name'] ?? '',
    podNamespace: values['pod-namespace'] ?? '',
    podUid: values['pod-uid'] ?? '',
    marginSeconds: values.margin,
    observe: values.observe,
    releaseTimeoutMs: values['release-timeout'],
    waitReportIntervalSeconds: values['wait-report-interval'],
  };
  if (values['lock-name']) options.lockName = values['lock-name'];
  if (values.kubeconfig) options.kubeconfig = values.kubeconfig;
  if (values['metrics-port']) options.metricsPort = values['metrics-port'];
  return options;
}

/**
 * Starts the hook and returns; the process then lives on its watch and exits
 * 0 on SIGTERM. A hook that cannot start logs why and idles until SIGTERM: a
 * crash-looping sidecar would only add noise to the operator's pod, and the
 * garbage collector remains the fallback.
 */
export async function runReleaseCommand({ values }: ParsedFlags<typeof releaseFlags>): Promise<void> {
  // An unknown LEADERHOOK_LOG_LEVEL is a setting the hook cannot start with,
  // like any other: said at the default level, then idle.
  let logger = createLineLogger('release-hook', 'info');
  try {
    logger = createLineLogger('release-hook');
    await startReleaseProcess({ ...releaseOptionsFromFlags(values), logger });
  } catch (error) {
    logger.error({ err: error }, 'release hook cannot start; idling until SIGTERM (garbage collection remains the fallback)');
    idleUntilSignal();
  }
}
