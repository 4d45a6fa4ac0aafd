import type { CoreV1Event, V1ConfigMap, V1Lease, V1OwnerReference, V1Pod, V1SelfSubjectAccessReview, V1Status } from '@kubernetes/client-node';

/**
 * client-node's models describe timestamps as `Date` because its serializer
 * converts them; this client hands out the JSON the API server sent, where
 * every timestamp is an RFC 3339 string. `Wire<T>` is the model as it really
 * arrives, so the compiler catches a `deletionTimestamp.getTime()` that would
 * fail at run time.
 */
export type Wire<T> = T extends Date ? string : T extends (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;

export type Pod = Wire<V1Pod>;
export type ConfigMap = Wire<V1ConfigMap>;
export type Lease = Wire<V1Lease>;
export type KubeEvent = Wire<CoreV1Event>;
export type Status = Wire<V1Status>;
export type OwnerReference = Wire<V1OwnerReference>;
export type SelfSubjectAccessReview = Wire<V1SelfSubjectAccessReview>;

/** One operator's entry in a kopf peering object's status, as kopf writes it (docs/design.md#kopf-peering-entries). */
export interface KopfPeer {
  priority?: number;
  /** Seconds after lastseen that the entry counts as dead. */
  lifetime?: number;
  lastseen?: string;
}

/** kopf's KopfPeering or ClusterKopfPeering (kopf.dev/v1): a free-form status of entries keyed by identity, no status subresource. */
export interface KopfPeering {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  status?: Record<string, KopfPeer | null>;
}

/** Any list the API returns: items plus the resourceVersion a watch resumes from. */
export interface List<T> {
  apiVersion?: string;
  kind?: string;
  /** client-node names `continue` `_continue`; on the wire it is `continue`. */
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** One line of a watch stream. For ERROR the object is a Status. */
export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/** Any object with metadata, enough for the watch to track resourceVersion. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}
