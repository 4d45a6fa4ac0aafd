/**
 * Container runs as the pod watch shows them, for following logs run by run
 * (test/support/recorder.ts). A log stream serves one run of one container,
 * and the API names the pod only by name; a StatefulSet reuses names, and a
 * restarted container is another run in the same pod. A run is told apart by
 * its pod's UID, its container, the kubelet's restartCount of that run, and
 * for sure by the runtime's container ID. Pure: pods in, runs out.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';

/** The status of container `name` of `pod`, regular or init (the release hook is a native sidecar, an init container). */
export function containerStatus(pod: V1Pod | undefined, name: string): V1ContainerStatus | undefined {
  return [...(pod?.status?.containerStatuses ?? []), ...(pod?.status?.initContainerStatuses ?? [])].find((status) => status.name === name);
}

/** One run of one container of one pod. */
export interface ContainerRun {
  pod: string;
  podUID: string;
  container: string;
  restartCount: number;
  /** The runtime's ID of this run (`containerd://...`). */
  containerID: string;
}

/** What the followers of a recording are keyed by: one per run. */
export function runKey(run: ContainerRun): string {
  return `${run.podUID}/${run.container}/${run.restartCount}`;
}

export function describeRun(run: ContainerRun): string {
  return `pod ${run.pod} (UID ${run.podUID}) container ${run.container}, run ${run.restartCount}`;
}

/**
 * The runs of `container` a pod event shows: the current one once it has
 * started, and the one it replaced (whose log stays readable as `previous`
 * until the next restart). Nothing while the container waits: its
 * restartCount is not yet the next run's.
 */
export function runsOf(pod: V1Pod, container: string): ContainerRun[] {
  const status = containerStatus(pod, container);
  const name = pod.metadata?.name;
  const podUID = pod.metadata?.uid;
  if (!status || !name || !podUID || !(status.state?.running || status.state?.terminated)) return [];
  const runs: ContainerRun[] = [];
  const base = { pod: name, podUID, container };
  if (status.containerID) runs.push({ ...base, restartCount: status.restartCount, containerID: status.containerID });
  const previous = status.lastState?.terminated?.containerID;
  if (previous && status.restartCount > 0) runs.push({ ...base, restartCount: status.restartCount - 1, containerID: previous });
  return runs;
}

/**
 * Where the log of `run` is served, given the pod of its name as last seen
 * (undefined once gone): as the pod's current run, still going or exited; as
 * its previous run; or not any more (the pod is gone or replaced by another
 * of the same name, or the run is older than the previous one).
 */
export function whereIsRun(podNow: V1Pod | undefined, run: ContainerRun): 'current' | 'exited' | 'previous' | 'gone' {
  if (podNow?.metadata?.uid !== run.podUID) return 'gone';
  const status = containerStatus(podNow, run.container);
  if (status?.containerID === run.containerID) return status.state?.terminated ? 'exited' : 'current';
  if (status?.lastState?.terminated?.containerID === run.containerID) return 'previous';
  return 'gone';
}
