import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import type { Operation } from 'fast-json-patch';

/** Everything the injector needs to know, decided by the caller (webhook flags, CLI). */
export interface InjectionSettings {
  /** Image of the release hook: the leaderhook image itself. */
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Written into the `leaderhook.io/injected` annotation. */
  version: string;
  /** terminationGracePeriodSeconds is never set below this (R1 needs the time). */
  gracePeriodFloorSeconds: number;
  /** When set, terminationGracePeriodSeconds is never left above this. */
  gracePeriodCapSeconds?: number;
  /** Default resources of the hook; pod annotations override them. */
  resources: V1ResourceRequirements;
  /** Default for observe mode (log what would be released, release nothing). */
  observe: boolean;
}

/** Why the injector did what it did: a constant for metrics, a sentence for people. */
export type InjectionReason = 'injected' | 'updated' | 'alreadyInjected' | 'optedOut' | 'mirrorPod' | 'notAPod';

export interface InjectionResult {
  reason: InjectionReason;
  message: string;
  /** JSON Patch (RFC 6902) against the submitted object; empty when nothing changes. */
  patch: Operation[];
  /** Shown to the user by kubectl (AdmissionResponse.warnings). */
  warnings: string[];
  /** The pod after the patch; the submitted pod when nothing changes. */
  pod: V1Pod;
}
