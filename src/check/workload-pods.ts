/**
 * What the pods of an opted-in namespace tell about leaderhook there, read
 * from their API objects only: which ServiceAccounts the hook runs as, which
 * pods came up without it, which nodes run them, and where the hook image
 * could not be pulled.
 */
import { annotations } from '../annotations.ts';
import { HOOK_CONTAINER_NAME } from '../injector/index.ts';
import type { Pod } from '../kube/types.ts';

/** Set by the kubelet on the API object that mirrors a static pod; the webhook never changes those. */
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
/** The kubelet's reasons for a container waiting on its image. */
const IMAGE_PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName']);

/** A pod the webhook injects: not opted out, not a mirror pod. */
export function isInjectable(pod: Pod): boolean {
  const meta = pod.metadata ?? {};
  if (meta.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return false;
  return meta.labels?.[annotations.inject] !== 'false' && meta.annotations?.[annotations.inject] !== 'false';
}

/** Finished, or being deleted (a rollout's old pod shuts down for a while after its replacement is ready): it will not run again. */
function isGoingAway(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' || pod.metadata?.deletionTimestamp !== undefined;
}

/** The ServiceAccounts the injectable pods run as; each one is what its pods' hook runs as. */
export function serviceAccountsOf(pods: readonly Pod[]): string[] {
  return [...new Set(pods.filter(isInjectable).map((p) => p.spec?.serviceAccountName || 'default'))].sort();
}

/**
 * Pods that should carry the hook and do not: created before the namespace
 * was labelled, or while the webhook was down. Pods that finished or are
 * being deleted are left out: they will not run again.
 */
export function uninjectedPods(pods: readonly Pod[]): string[] {
  return pods
    .filter((p) => isInjectable(p) && !isGoingAway(p) && p.metadata?.annotations?.[annotations.injected] === undefined)
    .map((p) => p.metadata?.name ?? '?')
    .sort();
}

/** The nodes the injectable pods run on, where the hook image must be pullable. */
export function operatorNodes(pods: readonly Pod[]): string[] {
  return [...new Set(pods.filter((p) => isInjectable(p) && !isGoingAway(p) && p.spec?.nodeName).map((p) => p.spec!.nodeName!))].sort();
}

/** The hook container's image and pull policy in an injected pod, if it has one. */
export function hookContainerOf(pod: Pod): { image: string; imagePullPolicy: string } | undefined {
  const hook = pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME);
  return hook?.image ? { image: hook.image, imagePullPolicy: hook.imagePullPolicy ?? 'IfNotPresent' } : undefined;
}

export interface PullFailure {
  pod: string;
  node: string;
  /** The image this pod's hook waits on; after a change of the hook image, not necessarily the one injected now. */
  image: string;
  reason: string;
  message: string;
}

/** Injected pods whose hook is waiting on its image: the proof the API has that a node cannot pull it. */
export function hookPullFailures(pods: readonly Pod[]): PullFailure[] {
  return pods.flatMap((pod) => {
    const status = pod.status?.initContainerStatuses?.find((s) => s.name === HOOK_CONTAINER_NAME);
    const waiting = status?.state?.waiting;
    if (!waiting?.reason || !IMAGE_PULL_FAILURES.has(waiting.reason)) return [];
    const image = hookContainerOf(pod)?.image ?? status?.image ?? '?';
    return [{ pod: pod.metadata?.name ?? '?', node: pod.spec?.nodeName ?? '?', image, reason: waiting.reason, message: waiting.message ?? '' }];
  });
}

/**
 * Why a pull failed, as far as the kubelet's waiting message says: the
 * reason alone (ErrImagePull, then ImagePullBackOff) is the same whatever
 * went wrong, and each cause has another remedy.
 */
export type PullCause = 'never' | 'invalid' | 'unreachable' | 'untrusted' | 'unauthorized' | 'missing' | 'unknown';

/**
 * Read from the runtime's error that the kubelet copies into the message (of
 * ImagePullBackOff too, after "Back-off pulling image": Kubernetes >= 1.30).
 * The network and TLS causes are tried first: their messages name the
 * manifest they failed to fetch, whose words ("not found" among them) must
 * not count as the registry's answer.
 */
export function pullFailureCause(reason: string, message: string): PullCause {
  if (reason === 'ErrImageNeverPull') return 'never';
  if (reason === 'InvalidImageName') return 'invalid';
  if (
    /connection refused|no such host|i\/o timeout|no route to host|network is unreachable|connection reset|TLS handshake timeout|context deadline exceeded|server misbehaving/i.test(
      message,
    )
  ) {
    return 'unreachable';
  }
  if (/x509|certificate/i.test(message)) return 'untrusted';
  if (/\b401\b|\b403\b|unauthorized|forbidden|access denied|authorization failed|authentication required/i.test(message)) return 'unauthorized';
  if (/not found|manifest unknown|name unknown/i.test(message)) return 'missing';
  return 'unknown';
}

/** The registry host an image is pulled from (`docker.io` for a name without one), as the runtime resolves it. */
export function registryOf(image: string): string {
  return qualifiedImageName(image).split('/')[0]!;
}

/**
 * The kubelet's and the runtime's wrapping of a pull error, outermost
 * first: each names the image or URL again, which the check's line already
 * has; the cause a user acts on is what is left at the end.
 */
const PULL_ERROR_WRAPPERS = [
  /^Back-off pulling image "[^"]*"(: |$)/,
  /^ErrImagePull: /,
  /^rpc error: code = \w+ desc = /,
  /^failed to pull and unpack image "[^"]*": /,
  /^failed to resolve reference "[^"]*": /,
  /^failed to do request: /,
  /^(Head|Get) "[^"]*": /,
];

/** What the runtime said went wrong, without its wrapping (`dial tcp 10.0.0.1:5000: connect: connection refused`). */
export function pullErrorText(message: string): string {
  let cause = message.trim();
  for (let unwrapped = true; unwrapped; ) {
    unwrapped = false;
    for (const wrapper of PULL_ERROR_WRAPPERS) {
      const next = cause.replace(wrapper, '');
      if (next !== cause) {
        cause = next;
        unwrapped = true;
      }
    }
  }
  return cause.length > 200 ? `${cause.slice(0, 199)}…` : cause;
}

/**
 * The names a container runtime reports for an image (node `status.images`)
 * are fully qualified (`docker.io/library/busybox:1.36`); a pod may say
 * `busybox:1.36`. Both are turned into the qualified form, as the runtime
 * resolves a short name.
 */
export function qualifiedImageName(image: string): string {
  const slash = image.indexOf('/');
  const first = slash < 0 ? '' : image.slice(0, slash);
  const hasRegistry = first.includes('.') || first.includes(':') || first === 'localhost';
  if (hasRegistry) return image;
  return slash < 0 ? `docker.io/library/${image}` : `docker.io/${image}`;
}

/** True when a node's status.images lists `image` under one of its names. */
export function nodeListsImage(nodeImages: readonly { names?: string[] }[] | undefined, image: string): boolean {
  const wanted = qualifiedImageName(image);
  return (nodeImages ?? []).some((entry) => (entry.names ?? []).some((name) => qualifiedImageName(name) === wanted));
}
