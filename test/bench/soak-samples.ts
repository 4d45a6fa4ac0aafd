/**
 * What the soak samples every minute: each running container's working set as
 * the kubelet counts it and its CPU time (its cgroup, container-cgroup.ts) with
 * its restart count, and each release hook's `leaderhook_hook_watch_up` from its metrics
 * endpoint (the soak's pods ask for one with leaderhook.io/hook-metrics-port),
 * with each hook's and webhook replica's V8 heap from the same pages.
 * A container that ends between the list and the read is simply not sampled
 * that minute.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { trustedCa, webhookMetrics, webhookReplicas } from '../support/cert-rotation.ts';
import { WEBHOOK_NAMESPACE } from '../support/faults.ts';
import { core } from '../support/kube.ts';
import { RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { parseExposition } from './apiserver-metrics.ts';
import { cgroupDirsOf, containerPids, readCgroup } from './container-cgroup.ts';
import { type SoakHeapRecord, type SoakSampleRecord, type SoakWatchRecord, WEBHOOK_CONTAINER_NAME } from './soak-analysis.ts';

/** The port the soak's hooks serve their metrics on. */
export const HOOK_METRICS_PORT = 9464;

/** The working set and restart count of every running container of `namespace`'s pods. */
export async function sampleContainers(namespace: string, atMs: number): Promise<SoakSampleRecord[]> {
  const pods = (await core.listNamespacedPod({ namespace })).items;
  const tasks = new Map<string, Map<string, number>>();
  const samples: SoakSampleRecord[] = [];
  for (const pod of pods) {
    const node = pod.spec?.nodeName ?? '';
    for (const status of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
      const id = status.containerID?.replace(/^containerd:\/\//, '');
      if (!id || !status.state?.running) continue;
      try {
        if (!tasks.has(node)) tasks.set(node, containerPids(pod.spec?.nodeName));
        const pid = tasks.get(node)!.get(id);
        if (pid === undefined) continue;
        const { workingSetBytes, anonBytes, cpuNanos } = readCgroup(cgroupDirsOf(pid));
        samples.push({
          kind: 'sample',
          atMs,
          pod: pod.metadata!.name!,
          container: status.name,
          namespace,
          workingSetBytes,
          anonBytes,
          cpuNanos,
          restarts: status.restartCount,
        });
      } catch {
        // ended between the list and the read
      }
    }
  }
  return samples;
}

/** `leaderhook_hook_watch_up{watch="…"} 1` lines of a metrics page, by watch. */
export function watchStates(metrics: string): Map<string, boolean> {
  const states = new Map<string, boolean>();
  for (const match of metrics.matchAll(/^leaderhook_hook_watch_up\{watch="([^"]+)"\} (\S+)$/gm)) states.set(match[1]!, Number(match[2]) === 1);
  return states;
}

const HEAP_SERIES: ReadonlySet<string> = new Set(['nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds_count']);

/** The heap in use and the major collections so far, from prom-client's default Node.js metrics; undefined without them. */
export function heapFigures(metrics: string): { heapUsedBytes: number; majorGcs: number } | undefined {
  const series = parseExposition(metrics, HEAP_SERIES);
  const used = series.find((each) => each.name === 'nodejs_heap_size_used_bytes');
  if (!used) return undefined;
  // the kind="major" series appears with the first major collection
  const major = series.find((each) => each.name === 'nodejs_gc_duration_seconds_count' && each.labels.kind === 'major');
  return { heapUsedBytes: used.value, majorGcs: major?.value ?? 0 };
}

/** Each hook's watches and heap, read from its metrics; a hook that does not answer in 2 s gives none this time. */
export async function hookMetrics(namespace: string, atMs: number): Promise<(SoakWatchRecord | SoakHeapRecord)[]> {
  const pods = (await core.listNamespacedPod({ namespace })).items.filter(
    (pod: V1Pod) => pod.status?.podIP && !pod.metadata?.deletionTimestamp && pod.spec?.initContainers?.some((c) => c.name === RELEASE_HOOK_CONTAINER),
  );
  const records: (SoakWatchRecord | SoakHeapRecord)[] = [];
  await Promise.all(
    pods.map(async (pod) => {
      try {
        const response = await fetch(`http://${pod.status!.podIP}:${HOOK_METRICS_PORT}/metrics`, { signal: AbortSignal.timeout(2_000) });
        const metrics = await response.text();
        for (const [watch, up] of watchStates(metrics)) records.push({ kind: 'watch', atMs, pod: pod.metadata!.name!, watch, up });
        const heap = heapFigures(metrics);
        const restarts = pod.status?.initContainerStatuses?.find((status) => status.name === RELEASE_HOOK_CONTAINER)?.restartCount ?? 0;
        if (heap) records.push({ kind: 'heap', atMs, namespace, pod: pod.metadata!.name!, container: RELEASE_HOOK_CONTAINER, ...heap, restarts });
      } catch {
        // starting, stopping, or restarting after a kill: the next minute reads it
      }
    }),
  );
  return records;
}

/** Each running webhook replica's heap, from its /metrics over TLS verified against the cluster's CA; a replica that does not answer gives none this time. */
export async function webhookHeaps(atMs: number): Promise<SoakHeapRecord[]> {
  const [ca, replicas] = await Promise.all([trustedCa(), webhookReplicas()]);
  const records: SoakHeapRecord[] = [];
  await Promise.all(
    replicas.map(async (replica) => {
      try {
        const heap = heapFigures(await webhookMetrics(replica, ca));
        if (heap)
          records.push({
            kind: 'heap',
            atMs,
            namespace: WEBHOOK_NAMESPACE,
            pod: replica.name,
            container: WEBHOOK_CONTAINER_NAME,
            ...heap,
            restarts: replica.restarts,
          });
      } catch {
        // deleted by a fault, or starting: the next minute reads it
      }
    }),
  );
  return records;
}
