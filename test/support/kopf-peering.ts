/**
 * kopf's peering as the tests read it: a KopfPeering object whose status holds
 * one entry per replica, `status.<identity>: {priority, lifetime, lastseen}`
 * (test/operators/kopf-operator), where the replica of the highest priority
 * runs. kopf has no lock, so the split-brain check follows the peering as a
 * Lease held, as the pod's UID, by the entry of the highest priority
 * (kopfPeering in operators.ts): each write of the object is one revision of
 * that Lease. Pure: no cluster.
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { ObservedWrite } from './split-brain.ts';

export interface PeerEntry {
  priority?: number;
  lifetime?: number;
  lastseen?: string;
}

export interface KopfPeeringObject {
  metadata?: { name?: string; resourceVersion?: string };
  /** A removed entry is null until kopf's next write drops the key. */
  status?: Record<string, PeerEntry | null>;
}

/** The identity of the entry of the highest priority: whom kopf lets run (none when two share it: kopf pauses both). */
export function topPeer(object: KopfPeeringObject | undefined): string | undefined {
  const entries = peerEntries(object);
  const top = Math.max(...entries.map(([, entry]) => entry.priority ?? 0));
  const first = entries.filter(([, entry]) => (entry.priority ?? 0) === top);
  return first.length === 1 ? first[0]?.[0] : undefined;
}

/** The identities with an entry (a null one is a removed entry). */
export function peerIdentities(object: KopfPeeringObject | undefined): Set<string> {
  return new Set(peerEntries(object).map(([identity]) => identity));
}

function peerEntries(object: KopfPeeringObject | undefined): [string, PeerEntry][] {
  return Object.entries(object?.status ?? {}).filter((entry): entry is [string, PeerEntry] => entry[1] !== null);
}

/** One write of the peering as the revision of the Lease the split-brain check follows: held by the top entry's identity, none once deleted. */
export function peeringAsLease(write: ObservedWrite<KopfPeeringObject>): ObservedWrite<V1Lease> {
  return {
    type: write.type,
    rv: write.rv,
    ...(write.relisted ? { relisted: true } : {}),
    object: { metadata: { name: write.object.metadata?.name }, spec: { holderIdentity: write.type === 'DELETED' ? undefined : topPeer(write.object) } },
  };
}
