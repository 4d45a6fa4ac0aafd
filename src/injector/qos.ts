/**
 * A pod's QoS class as the API server computes it, for the one question the
 * injector has: is the pod Guaranteed? The class counts every container,
 * init containers (so the native-sidecar hook) included, so a hook whose
 * requests differ from its limits turns a Guaranteed pod Burstable: the
 * kernel's OOM killer then ranks the operator ahead of Guaranteed pods, and
 * the kubelet's static CPU manager no longer pins its CPUs (docs/design.md,
 * "The hook's resources").
 */
import type { V1Container, V1ResourceRequirements } from '@kubernetes/client-node';
import { positiveQuantity, sameQuantity } from './quantity.ts';

const QOS_RESOURCES = ['cpu', 'memory'] as const;

/** YAML may give a quantity as a number (cpu: 1); the API server reads it as the same quantity. */
const quantityOf = (value: unknown): string | undefined => (typeof value === 'string' || typeof value === 'number' ? String(value) : undefined);

/** Requests equal to limits, both set, for CPU and memory; a request left out takes its limit, as the API server defaults it. */
export function hasGuaranteedResources(resources: V1ResourceRequirements | undefined): boolean {
  return QOS_RESOURCES.every((resource) => {
    const limit = quantityOf(resources?.limits?.[resource]);
    if (limit === undefined || !positiveQuantity(limit)) return false;
    const request = quantityOf(resources?.requests?.[resource]);
    return request === undefined || sameQuantity(request, limit);
  });
}

/**
 * Whether the containers are those of a Guaranteed pod. A pod with resources
 * of its own (`spec.resources`, pod-level resources) takes its class from
 * those, which the hook does not change: it is not asked about here.
 */
export function isGuaranteed(containers: readonly V1Container[]): boolean {
  return containers.length > 0 && containers.every((container) => hasGuaranteedResources(container.resources));
}
