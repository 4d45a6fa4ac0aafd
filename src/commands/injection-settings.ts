/**
 * The injection settings of the webhook's flags, shared with `leaderhook
 * inject`: both read the same flag specs (commands/flags.ts) and refuse the
 * same values, so the webhook and the offline injector cannot drift. Loads
 * nothing but the injector, so `inject` starts without the webhook's stack.
 */
import type { V1ResourceRequirements } from '@kubernetes/client-node';
import { type FlagValues, UsageError } from '../flags.ts';
import { type InjectionSettings, isResourceQuantity } from '../injector/index.ts';
import { version } from '../version.ts';
import type { injectionFlags } from './flags.ts';

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

const isPullPolicy = (value: string): value is InjectionSettings['imagePullPolicy'] => (PULL_POLICIES as readonly string[]).includes(value);

/** The injection flags' values: the webhook's and `inject`'s tables both hold them. */
type InjectionFlagValues = FlagValues<typeof injectionFlags>;

function hookResources(values: InjectionFlagValues): V1ResourceRequirements {
  const pick = (flag: 'hook-cpu-request' | 'hook-memory-request' | 'hook-cpu-limit' | 'hook-memory-limit'): string | undefined => {
    const value = values[flag];
    if (value === '') return undefined;
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
      "--hook-image is not set: it must name the leaderhook image the webhook runs (deploy/ sets it from the webhook container's image through kustomize's images:)",
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

/**
 * Turns the webhook's flags into injection settings, refusing values that
 * could only break pods. `dev` is the webhook's --dev, which may default the
 * hook image; `inject` has none.
 */
export function injectionSettingsFromFlags(values: InjectionFlagValues, dev = false): InjectionSettings {
  const pullPolicy = values['hook-image-pull-policy'];
  if (!isPullPolicy(pullPolicy)) {
    throw new UsageError(`--hook-image-pull-policy: "${pullPolicy}" is not one of ${PULL_POLICIES.join(', ')}`);
  }
  const image = checkHookImage(values['hook-image'], dev);
  const floor = Math.ceil(values['grace-period-floor']);
  const cap = Math.floor(values['grace-period-cap']);
  if (cap > 0 && cap < floor) throw new UsageError(`--grace-period-cap (${cap}s) is below --grace-period-floor (${floor}s)`);
  return {
    image,
    imagePullPolicy: pullPolicy,
    version,
    gracePeriodFloorSeconds: floor,
    ...(cap > 0 ? { gracePeriodCapSeconds: cap } : {}),
    resources: hookResources(values),
    observe: values.observe,
  };
}
