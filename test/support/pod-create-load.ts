/**
 * Pods created through the real API server at a steady rate, each checked
 * for the webhook's injection as the API server returned it and deleted
 * again. The pod is test/testdata/admission's kubebuilder pod with a
 * scheduling gate, so none is ever scheduled or started: the load is the
 * admission path (API server → Service → webhook → etcd), not the kubelet.
 */
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { core } from './kube.ts';

const review = JSON.parse(readFileSync(new URL('../testdata/admission/kubebuilder-pod.review.json', import.meta.url), 'utf8')) as {
  request: { object: V1Pod };
};

/** The ServiceAccount the kubebuilder pod runs as; admission refuses the pod where it is missing. */
export const KUBEBUILDER_SERVICE_ACCOUNT = review.request.object.spec!.serviceAccountName!;

/** The kubebuilder operator's pod (its ReplicaSet owner removed), held back from scheduling by a gate. */
export function gatedKubebuilderPod(generateName: string): V1Pod {
  const { metadata, spec } = structuredClone(review.request.object);
  return {
    metadata: { generateName, labels: metadata?.labels, annotations: metadata?.annotations },
    spec: { ...spec!, schedulingGates: [{ name: 'leaderhook.io/never-scheduled' }] },
  };
}

export const isInjected = (pod: V1Pod): boolean => pod.metadata?.annotations?.['leaderhook.io/injected'] !== undefined;

export interface PodCreateLoadResult {
  /** Creates the API server answered with a pod. */
  created: number;
  /** Of those, the pods that came back without the injection. */
  uninjected: string[];
  /** Creates that failed, with the API server's message (the first few). */
  failed: number;
  failures: string[];
  /** Creates not started because `maxInFlight` were still unanswered: the rate fell behind. */
  skipped: number;
  /** Creates answered per whole second of the run, first and last second left out. */
  perSecond: number[];
  seconds: number;
}

export interface PodCreateLoad {
  /** Stops starting creates, waits for those in flight and their deletes. */
  stop(): Promise<PodCreateLoadResult>;
}

/**
 * Starts creating pods in `namespace` at `ratePerSecond`, one every
 * 1/rate s on a clock that does not drift, at most `maxInFlight` at once.
 */
export function startPodCreateLoad(namespace: string, { ratePerSecond, maxInFlight = 32 }: { ratePerSecond: number; maxInFlight?: number }): PodCreateLoad {
  const startedAt = Date.now();
  const intervalMs = 1000 / ratePerSecond;
  const answeredAt: number[] = [];
  const uninjected: string[] = [];
  const failures: string[] = [];
  let failed = 0;
  let skipped = 0;
  let inFlight = 0;
  let stopped = false;
  const pending = new Set<Promise<void>>();

  async function createAndDelete(): Promise<void> {
    inFlight++;
    try {
      const pod = await core.createNamespacedPod({ namespace, body: gatedKubebuilderPod('rotation-load-') });
      answeredAt.push(Date.now());
      if (!isInjected(pod)) uninjected.push(pod.metadata?.name ?? '?');
      // An unscheduled pod is deleted at once; nothing else of the load stays behind.
      await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace, gracePeriodSeconds: 0 }).catch(() => {});
    } catch (error) {
      failed++;
      if (failures.length < 10) failures.push(error instanceof Error ? error.message : String(error));
    } finally {
      inFlight--;
    }
  }

  let tick = 0;
  let timer: NodeJS.Timeout | undefined;
  function schedule(): void {
    if (stopped) return;
    tick++;
    timer = setTimeout(
      () => {
        if (inFlight >= maxInFlight) skipped++;
        else {
          const create = createAndDelete();
          pending.add(create);
          void create.finally(() => pending.delete(create));
        }
        schedule();
      },
      Math.max(0, startedAt + tick * intervalMs - Date.now()),
    );
  }
  schedule();

  return {
    async stop(): Promise<PodCreateLoadResult> {
      stopped = true;
      clearTimeout(timer);
      const stoppedAt = Date.now();
      await Promise.all([...pending]);
      const seconds = Math.floor((stoppedAt - startedAt) / 1000);
      const counts = Array.from({ length: seconds }, () => 0);
      for (const at of answeredAt) {
        const second = Math.floor((at - startedAt) / 1000);
        if (second < seconds) counts[second]!++;
      }
      return { created: answeredAt.length, uninjected, failed, failures, skipped, perSecond: counts.slice(1, -1), seconds };
    },
  };
}
