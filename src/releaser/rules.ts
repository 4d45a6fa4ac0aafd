/**
 * The release rules of docs/design.md#the-release-rules, as pure functions of what the API said.
 * Nothing here reads a clock, the network or the environment, so each rule
 * and each refusal is tested on its own.
 */
import { annotations, observeAnnotationIsOn } from '../annotations.ts';
import type { ConfigMap, Lease, OwnerReference, Pod } from '../kube/types.ts';

/** A holder looked up live and not found (404). */
export const notFound = Symbol('notFound');
export type HolderLookup = Pod | typeof notFound;

function isEmptyMap(m: Record<string, unknown> | undefined): boolean {
  return m === undefined || m === null || Object.keys(m).length === 0;
}

/**
 * The single v1/Pod owner of a ConfigMap that may be a lock, from its
 * metadata alone (what the metadata-only watch delivers). Whether it really is
 * a lock also depends on its data: see lockOwner.
 */
export function lockCandidateOwner(cm: { metadata?: ConfigMap['metadata'] } | undefined): OwnerReference | undefined {
  const refs = cm?.metadata?.ownerReferences;
  if (refs?.length !== 1) return undefined;
  const ref = refs[0];
  if (ref?.apiVersion !== 'v1' || ref.kind !== 'Pod' || !ref.name || !ref.uid) return undefined;
  return ref;
}

/**
 * The single v1/Pod owner of a ConfigMap lock, as operator-lib's
 * `leader.Become` writes it; undefined when the ConfigMap is not a lock.
 * Needs the full object, read live: a metadata-only object has no data to check.
 */
export function lockOwner(cm: ConfigMap | undefined): OwnerReference | undefined {
  const ref = lockCandidateOwner(cm);
  // A ConfigMap that carries data is the pod's own configuration, not a
  // lock: never delete it before the garbage collector would.
  if (!ref || !isEmptyMap(cm?.data) || !isEmptyMap(cm?.binaryData)) return undefined;
  return ref;
}

/** Exactly one v1/Pod ownerReference and no data or binaryData (docs/design.md#what-counts-as-a-lock). */
export function isConfigMapLock(cm: ConfigMap | undefined): boolean {
  return lockOwner(cm) !== undefined;
}

/**
 * The single v1/Pod owner of a Lease that is a leader-for-life lock
 * (docs/design.md#leases-owned-by-a-pod): freed like a ConfigMap lock, by
 * R0-R3 and a guarded delete. A Lease has no data; one with spec.strategy
 * belongs to coordinated leader election and is never a lock.
 */
export function leaseLockOwner(lease: Lease | undefined): OwnerReference | undefined {
  if (!lease || lease.spec?.strategy) return undefined;
  return lockCandidateOwner(lease);
}

export type OwnRefusal = 'ownPodGone' | 'ownPodReplaced' | 'notBeingDeleted' | 'pastDeadline' | 'badDeletionTimestamp';

export type OwnDecision = { release: true; rule: 'R1'; message: string } | { release: false; refusal: OwnRefusal; message: string };

/**
 * R1, own stop: on SIGTERM at local time `t` (ms), release this pod's locks
 * only if the pod (read live) still has our UID, is being deleted, and `t` is
 * more than `marginSeconds` before its deletionTimestamp. The kubelet's grace
 * timer cannot fire before deletionTimestamp, so a SIGTERM that early can
 * only follow the stop of every main container. Later than that, the SIGTERM
 * may race the operator's SIGKILL: release nothing, GC or R2 will.
 */
export function decideOwnRelease(pod: Pod | undefined, ownUid: string, t: number, marginSeconds: number): OwnDecision {
  if (!pod) return { release: false, refusal: 'ownPodGone', message: 'own pod no longer exists; garbage collection frees its locks' };
  if (!ownUid || pod.metadata?.uid !== ownUid) {
    return { release: false, refusal: 'ownPodReplaced', message: `pod of this name now has UID ${pod.metadata?.uid}, not ${ownUid}` };
  }
  const deletion = pod.metadata?.deletionTimestamp;
  if (!deletion) {
    return {
      release: false,
      refusal: 'notBeingDeleted',
      message: 'own pod is not being deleted (only the hook restarts, or the kubelet stops the pod on its own): nothing proves the operator stopped',
    };
  }
  const deadline = Date.parse(deletion);
  if (Number.isNaN(deadline)) {
    return { release: false, refusal: 'badDeletionTimestamp', message: `deletionTimestamp ${JSON.stringify(deletion)} is not a time` };
  }
  const latest = deadline - marginSeconds * 1000;
  if (!(t < latest)) {
    return {
      release: false,
      refusal: 'pastDeadline',
      message: `SIGTERM at ${new Date(t).toISOString()} is not ${marginSeconds}s before the deletion deadline ${deletion}: the operator may have been killed rather than stopped`,
    };
  }
  return {
    release: true,
    rule: 'R1',
    message: `SIGTERM ${((latest - t) / 1000).toFixed(1)}s before deadline-margin (deadline ${deletion}): every main container has stopped`,
  };
}

export type HolderState = 'running' | 'notReady' | 'crashLooping' | 'terminating' | 'pending' | 'terminalContainersNotTerminated' | 'unknown';

export type HolderDecision =
  | { release: true; rule: 'R2' | 'R3'; reason: 'holderGone' | 'holderReplaced' | 'holderTerminal'; message: string }
  | { release: false; state: HolderState; message: string };

function containerGroups(pod: Pod): { names: string[]; statuses: { name: string; terminated: boolean }[] } {
  const spec = pod.spec;
  const names = [
    ...(spec?.initContainers ?? []).map((c) => c.name),
    ...(spec?.containers ?? []).map((c) => c.name),
    ...(spec?.ephemeralContainers ?? []).map((c) => c.name),
  ];
  const status = pod.status;
  const statuses = [...(status?.initContainerStatuses ?? []), ...(status?.containerStatuses ?? []), ...(status?.ephemeralContainerStatuses ?? [])].map((s) => ({
    name: s.name,
    terminated: s.state?.terminated !== undefined && s.state?.terminated !== null,
  }));
  return { names, statuses };
}

/**
 * True when the kubelet has finished the pod: phase Failed or Succeeded and
 * every init, regular and ephemeral container of the spec has a status, and
 * it is `terminated`. The kubelet writes phase and container states
 * together; PodGC, controllers or a human with pods/status may set the phase
 * alone, which must not free a lock while the operator might still run.
 */
export function isHolderFinished(pod: Pod): boolean {
  const phase = pod.status?.phase;
  if (phase !== 'Failed' && phase !== 'Succeeded') return false;
  const { names, statuses } = containerGroups(pod);
  if (names.length === 0) return false;
  const byName = new Map(statuses.map((s) => [s.name, s]));
  return names.every((n) => byName.get(n)?.terminated === true) && statuses.every((s) => s.terminated);
}

/** What the holder is doing, in one word and one sentence (for reports, never for release). */
export function describeHolder(pod: Pod): { state: HolderState; message: string } {
  const phase = pod.status?.phase ?? 'Unknown';
  const reason = pod.status?.reason ? ` (${pod.status.reason})` : '';
  const node = pod.spec?.nodeName ? ` on node ${pod.spec.nodeName}` : '';
  if (phase === 'Failed' || phase === 'Succeeded') {
    const live = containerGroups(pod)
      .statuses.filter((s) => !s.terminated)
      .map((s) => s.name);
    return {
      state: 'terminalContainersNotTerminated',
      message: `phase ${phase}${reason}${node} but container(s) ${live.join(', ') || '(without status)'} not reported terminated`,
    };
  }
  if (pod.metadata?.deletionTimestamp) {
    return { state: 'terminating', message: `Terminating since ${pod.metadata.deletionTimestamp}${node} (phase ${phase})` };
  }
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  const looping = statuses.filter((s) => s.state?.waiting?.reason === 'CrashLoopBackOff');
  if (looping.length > 0) {
    const restarts = looping.map((s) => `${s.name} restarted ${s.restartCount ?? 0}x`).join(', ');
    return { state: 'crashLooping', message: `crash-looping${node} (${restarts}); a restarted operator keeps its lock` };
  }
  if (phase === 'Pending') return { state: 'pending', message: `Pending${node}` };
  if (phase === 'Running') {
    const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready && ready.status !== 'True') {
      return {
        state: 'notReady',
        message: `Running${node} but not Ready${ready.reason ? ` (${ready.reason})` : ''}; if its node is NotReady the pod's status is stale and it may still be running`,
      };
    }
    return { state: 'running', message: `Running${node}` };
  }
  return { state: 'unknown', message: `phase ${phase}${reason}${node}` };
}

/**
 * R2 and R3, for a ConfigMap lock held by another pod, from a live GET of the
 * holder by the owner's name. R3: not found, or found with another UID (a
 * new pod of the same name) — exactly what the garbage collector would do.
 * R2: the holder finished (see isHolderFinished). Anything else — running,
 * crash-looping, on a NotReady node, stuck Terminating with a live
 * container — is waited for, never released.
 */
export function decideHolderRelease(holder: HolderLookup, owner: OwnerReference): HolderDecision {
  if (holder === notFound) {
    return { release: true, rule: 'R3', reason: 'holderGone', message: `holder pod ${owner.name} (UID ${owner.uid}) no longer exists` };
  }
  const uid = holder.metadata?.uid;
  if (uid !== owner.uid) {
    return {
      release: true,
      rule: 'R3',
      reason: 'holderReplaced',
      message: `holder pod ${owner.name} (UID ${owner.uid}) no longer exists; a pod of the same name has UID ${uid}`,
    };
  }
  if (isHolderFinished(holder)) {
    const reason = holder.status?.reason ? ` (${holder.status.reason})` : '';
    return {
      release: true,
      rule: 'R2',
      reason: 'holderTerminal',
      message: `holder pod ${owner.name} is ${holder.status?.phase}${reason} and every container is terminated`,
    };
  }
  const { state, message } = describeHolder(holder);
  return { release: false, state, message: `holder pod ${owner.name} is ${message}` };
}

/** Labels the kubelet or a controller gives each pod individually; ignored when comparing workloads. */
const perPodLabels = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'batch.kubernetes.io/job-completion-index',
]);

/**
 * Whether two pods run the same operator: the same controller, or the same
 * labels apart from per-pod ones (old and new ReplicaSets of one Deployment).
 * Decides only whether a standby reports its wait, never a release.
 */
export function sameWorkload(a: Pod, b: Pod): boolean {
  const ca = a.metadata?.ownerReferences?.find((r) => r.controller);
  const cb = b.metadata?.ownerReferences?.find((r) => r.controller);
  if (ca && cb && ca.uid === cb.uid) return true;
  const strip = (labels: Record<string, string> | undefined) =>
    Object.entries(labels ?? {})
      .filter(([k]) => !perPodLabels.has(k))
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  const la = strip(a.metadata?.labels);
  const lb = strip(b.metadata?.labels);
  return la.length > 0 && JSON.stringify(la) === JSON.stringify(lb);
}

/**
 * client-go's leaderless record (ReleaseOnCancel): no holder, a 1 s lease,
 * acquire and renew time now. Every other field — transitions, strategy,
 * preferred holder, labels — is kept; the resourceVersion guards the update.
 */
export function releasedLease(lease: Lease, now: number): Lease {
  const micro = microTime(now);
  return {
    ...lease,
    spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: micro, renewTime: micro },
  };
}

/** metav1.MicroTime's wire format: RFC 3339 with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Whether the pod's annotations ask for observe mode; undefined when they say nothing. */
export function observeFromAnnotations(pod: Pod | undefined): boolean | undefined {
  const value = pod?.metadata?.annotations?.[annotations.observe];
  if (value === undefined) return undefined;
  return observeAnnotationIsOn(value);
}

/**
 * Observe mode for a release: always with the flag (the webhook's observe
 * mode, the administrator's), which the pod's annotation cannot turn off;
 * without it, as the annotation says. The injector warns about an annotation
 * this overrules (docs/security.md).
 */
export function observeMode(pod: Pod | undefined, flag: boolean): boolean {
  return flag || observeFromAnnotations(pod) === true;
}

export function lockNameFromAnnotations(pod: Pod | undefined): string | undefined {
  return pod?.metadata?.annotations?.[annotations.lock]?.trim() || undefined;
}
