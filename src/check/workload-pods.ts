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
  reason: string;
  message: string;
}

/** Injected pods whose hook is waiting on its image: the proof the API has that a node cannot pull it. */
export function hookPullFailures(pods: readonly Pod[]): PullFailure[] {
  return pods.flatMap((pod) => {
    const status = pod.status?.initContainerStatuses?.find((s) => s.name === HOOK_CONTAINER_NAME);
    const waiting = status?.state?.waiting;
    if (!waiting?.reason || !IMAGE_PULL_FAILURES.has(waiting.reason)) return [];
    return [{ pod: pod.metadata?.name ?? '?', node: pod.spec?.nodeName ?? '?', reason: waiting.reason, message: waiting.message ?? '' }];
  });
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
