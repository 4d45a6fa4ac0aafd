/**
 * Which Leases held by identity are this pod's, and when that is proven
 * (docs/design.md#leases-held-by-identity). A framework builds its identity
 * from the pod's name or hostname (controller-runtime: `hostname_uuid`;
 * fabric8 and JOSDK: `$HOSTNAME`; a client-go elector: often `POD_NAME`).
 * The name is unique in the namespace; a hostname is not: `spec.hostname`
 * repeats across a workload's replicas, and the kubelet truncates names over
 * 63 characters, cutting off a ReplicaSet's random suffix. So an identity
 * names this pod only when a live list shows no other pod that could carry
 * the same name or hostname. Pure functions of what the API said.
 */
import type { Lease, Pod } from '../kube/types.ts';
import { isHolderFinished, lockCandidateOwner } from './rules.ts';

/** The kubelet's longest hostname (a DNS label). */
const HOSTNAME_MAX = 63;

/**
 * The hostname the kubelet gives a pod's containers: `spec.hostnameOverride`
 * when set, else `spec.hostname`, else the pod's name, cut to 63 characters
 * with trailing `-` and `.` removed. Undefined with hostNetwork: the node's.
 */
export function kubeletHostname(pod: Pod): string | undefined {
  if (pod.spec?.hostNetwork) return undefined;
  const override = (pod.spec as { hostnameOverride?: string } | undefined)?.hostnameOverride;
  if (override) return override;
  const name = pod.spec?.hostname || pod.metadata?.name;
  if (!name) return undefined;
  return name.length <= HOSTNAME_MAX ? name : name.slice(0, HOSTNAME_MAX).replace(/[-.]+$/, '');
}

/** The part of a holder identity a framework took from the pod: all of it, or what precedes the first `_` (never in a DNS name). */
export function identityHost(holder: string): string {
  const cut = holder.indexOf('_');
  return cut < 0 ? holder : holder.slice(0, cut);
}

/**
 * The names this pod's identities can start with: its name and, unless it
 * has hostNetwork (the node's hostname, shared with every such pod there),
 * its hostname and the hostname the process sees, when that is the same
 * host (an FQDN with setHostnameAsFQDN). Empty with hostNetwork.
 */
export function ownIdentityNames(pod: Pod, seenHostname?: string): string[] {
  const podName = pod.metadata?.name;
  const hostname = kubeletHostname(pod);
  if (!podName || !hostname) return [];
  const names = new Set([podName, hostname]);
  if (seenHostname?.startsWith(`${hostname}.`)) names.add(seenHostname);
  return [...names];
}

/**
 * A Lease held by identity whose holder names one of `names`; never one
 * owned by a pod (released by the ownerReference rule), one with
 * `spec.strategy` (coordinated leader election: the API server's), or one
 * with no holder (already released).
 */
export function heldByName(lease: Lease | undefined, names: readonly string[]): boolean {
  const holder = lease?.spec?.holderIdentity;
  if (!holder || lease?.spec?.strategy || lockCandidateOwner(lease)) return false;
  const host = identityHost(holder);
  return host !== '' && names.includes(host);
}

/** Whether `pod` could hold a Lease whose identity starts with `host`: by its name, its hostname (or an FQDN of it), or the node's hostname. */
export function mayCarryName(pod: Pod, host: string): boolean {
  if (pod.metadata?.name === host) return true;
  const sameHost = (name: string) => host === name || host.startsWith(`${name}.`) || name.startsWith(`${host}.`);
  if (pod.spec?.hostNetwork) {
    // the node's hostname is taken to be its node's name; not scheduled yet: it could be any
    const node = pod.spec.nodeName;
    return !node || sameHost(node);
  }
  const hostname = kubeletHostname(pod);
  return hostname !== undefined && sameHost(hostname);
}

export type IdentityDecision = { release: true } | { release: false; others: string[]; message: string };

/**
 * Whether this pod may release a Lease it holds by identity: only when no
 * other pod of `pods` — a list read live after the Lease's version, so a pod
 * that took the Lease since is in it — could carry the identity's name. A pod
 * whose every container has terminated cannot hold anything and is not
 * counted.
 */
export function decideIdentityRelease(lease: Lease, self: { podUid: string }, pods: readonly Pod[]): IdentityDecision {
  const holder = lease.spec?.holderIdentity ?? '';
  const host = identityHost(holder);
  const others = pods.filter((p) => p.metadata?.uid !== self.podUid && !isHolderFinished(p) && mayCarryName(p, host)).map((p) => p.metadata?.name ?? '?');
  if (others.length === 0) return { release: true };
  return {
    release: false,
    others,
    message: `holder ${JSON.stringify(holder)} could also be pod ${others.join(', ')} (same name or hostname ${JSON.stringify(host)}): left to expire`,
  };
}

export type IdentityHolderDecision = { release: true; holders: Pod[]; message: string } | { release: false; carriers: Pod[]; message: string };

/**
 * R2 for a Lease held by identity, from another pod's hook
 * (docs/design.md#r2-for-leases-held-by-identity): its holder is one of the
 * pods that could carry the identity's name, so it can never renew the
 * Lease once every one of them has finished (isHolderFinished). With `pods`
 * read live after the Lease's version, a pod that took the Lease since is in
 * them. No such pod at all is no proof: the holder may be gone, or live in
 * another namespace; the Lease then expires as without leaderhook.
 */
export function decideIdentityHolderRelease(lease: Lease, pods: readonly Pod[]): IdentityHolderDecision {
  const holder = lease.spec?.holderIdentity ?? '';
  const host = identityHost(holder);
  const carriers = pods.filter((p) => mayCarryName(p, host));
  const names = (list: Pod[]) => list.map((p) => p.metadata?.name ?? '?').join(', ');
  if (carriers.length === 0) {
    return { release: false, carriers, message: `no pod of the namespace can carry ${JSON.stringify(host)}: left to expire` };
  }
  const live = carriers.filter((p) => !isHolderFinished(p));
  if (live.length > 0) {
    return { release: false, carriers, message: `holder ${JSON.stringify(holder)} may be pod ${names(live)}, not finished: waiting` };
  }
  const phases = carriers.map((p) => `${p.metadata?.name} ${p.status?.phase}${p.status?.reason ? ` (${p.status.reason})` : ''}`).join(', ');
  return {
    release: true,
    holders: carriers,
    message: `holder ${JSON.stringify(holder)} can only be pod ${phases}, with every container terminated`,
  };
}

const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `name` is a name a pod can have (a DNS subdomain of at most 253 characters). */
export function isPodName(name: string): boolean {
  return name.length <= 253 && dnsSubdomain.test(name);
}

/**
 * Whether the pod named as the identity's host settles the look by itself:
 * a pod of that name can carry the name, so while it has not finished the
 * Lease may be its own and nothing is released, whatever the other pods are.
 * Only a finished or missing pod of that name needs the list of all.
 */
export function namedPodHoldsOn(pod: Pod | undefined): pod is Pod {
  return pod !== undefined && !isHolderFinished(pod);
}

/** Whether the Lease ran out by `now` (ms): then any candidate may take it already, and writing it gains nothing. */
export function leaseExpired(lease: Lease, now: number): boolean {
  const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '');
  const duration = lease.spec?.leaseDurationSeconds;
  if (Number.isNaN(renewed) || !duration) return false;
  return renewed + duration * 1000 < now;
}
