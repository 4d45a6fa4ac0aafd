import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import type { Operation } from 'fast-json-patch';

/** Everything the injector needs to know, decided by the caller (webhook flags, CLI). */
export interface InjectionSettings {
  /** Image of the release hook: the leaderhook image itself. */
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Written into the `leaderhook.io/injected` annotation. */
  version: string;
  /** terminationGracePeriodSeconds is raised to this when below (R1 needs the time); the pod's annotation may go lower. */
  gracePeriodFloorSeconds: number;
  /** When set, terminationGracePeriodSeconds is never left above this, whatever the pod's annotation asks. */
  gracePeriodCapSeconds?: number;
  /** Default resources of the hook; pod annotations override them. */
  resources: V1ResourceRequirements;
  /** Observe mode for every hook (log what would be released, release nothing); a pod's annotation can add it, not turn it off. */
  observe: boolean;
}

/** Why the injector did what it did: a constant for metrics, a sentence for people. */
export type InjectionReason = 'injected' | 'updated' | 'alreadyInjected' | 'optedOut' | 'mirrorPod' | 'notAPod';

export interface InjectionResult {
  reason: InjectionReason;
  message: string;
  /** JSON Patch (RFC 6902) against the submitted object; empty when nothing changes. Its values are shared with `pod`. */
  patch: Operation[];
  /** Shown to the user by kubectl (AdmissionResponse.warnings). */
  warnings: string[];
  /**
   * The pod after the patch; the submitted pod when nothing changes. It shares
   * every part the injector left alone with the submitted pod: treat both as
   * read-only.
   */
  pod: V1Pod;
}

/**
 * Why a workload got the warnings it got (or none): a constant for metrics, a
 * sentence for people. Distinct from the pod reasons, so the two share the
 * webhook's `reason` label without ambiguity.
 */
export type WorkloadReason =
  /** Its pods would be injected, and something about them deserves a warning. */
  | 'templateWarnings'
  /** Its pods would be injected as they are: nothing to say. */
  | 'templateClean'
  /** Its pod template opts out (or claims to be a mirror pod): the injector would leave its pods alone. */
  | 'templateSkipped'
  /** Where its kind keeps a pod template, there is none with a containers list, or one with a field of the wrong type. */
  | 'noPodTemplate'
  /** Not one of the workload kinds leaderhook checks. */
  | 'notAWorkload';

export interface WorkloadResult {
  reason: WorkloadReason;
  message: string;
  /** What the injector would warn about on each of its pods; shown by kubectl on the workload itself. */
  warnings: string[];
}

/**
 * A workload's pod template injected as the webhook would inject each of its
 * pods, for `leaderhook inject`: the patch is against the workload object.
 */
export interface WorkloadInjection {
  reason: InjectionReason;
  message: string;
  /** JSON Patch against the workload; its paths lead into the pod template. Empty when nothing changes. */
  patch: Operation[];
  warnings: string[];
}
