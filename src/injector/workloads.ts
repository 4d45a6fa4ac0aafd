/**
 * Warnings on workload objects (docs/design.md#warnings-on-workloads-never-patches).
 *
 * The pods of a Deployment are created by the ReplicaSet controller, and
 * controllers drop admission warnings: whoever applies a Deployment with
 * `terminationGracePeriodSeconds: 0` would never learn that its pods get 10 s.
 * Like Pod Security Admission, leaderhook therefore also looks at the workload
 * itself and answers with warnings only — never a patch, so GitOps tools see
 * no drift between what they applied and what is stored.
 *
 * The warnings are exactly those the pod injector gives for a pod built from
 * the template: one source of truth for what leaderhook does to a pod. Pure,
 * like the rest of src/injector.
 */
import type { V1PodTemplateSpec } from '@kubernetes/client-node';
import { isRecord } from '../is-record.ts';
import { injectPod, podShapeProblem } from './index.ts';
import type { InjectionSettings, WorkloadInjection, WorkloadReason, WorkloadResult } from './types.ts';

export type { WorkloadInjection, WorkloadReason, WorkloadResult } from './types.ts';

/** A workload kind whose objects carry a pod template, and where it sits. */
export interface WorkloadKind {
  group: string;
  version: string;
  kind: string;
  /** The plural resource a webhook rule names. */
  resource: string;
  /** Field path from the object to its PodTemplateSpec. */
  templatePath: readonly string[];
}

/**
 * Every workload kind the webhook checks. The webhook accepts exactly these
 * (besides pods), and the webhook configuration's rules can be checked
 * against `group`, `version` and `resource`.
 */
export const WORKLOAD_KINDS: readonly WorkloadKind[] = [
  { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments', templatePath: ['spec', 'template'] },
  { group: 'apps', version: 'v1', kind: 'StatefulSet', resource: 'statefulsets', templatePath: ['spec', 'template'] },
  { group: 'apps', version: 'v1', kind: 'DaemonSet', resource: 'daemonsets', templatePath: ['spec', 'template'] },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet', resource: 'replicasets', templatePath: ['spec', 'template'] },
  { group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs', templatePath: ['spec', 'template'] },
  { group: 'batch', version: 'v1', kind: 'CronJob', resource: 'cronjobs', templatePath: ['spec', 'jobTemplate', 'spec', 'template'] },
];

/** The workload kind with this group, version and kind (an AdmissionRequest's `kind`), if leaderhook checks it. */
export function findWorkloadKind(gvk: { group?: unknown; version?: unknown; kind?: unknown }): WorkloadKind | undefined {
  return WORKLOAD_KINDS.find((w) => w.group === gvk.group && w.version === gvk.version && w.kind === gvk.kind);
}

/** The workload kind an object declares with its own apiVersion and kind, if leaderhook checks it. */
export function workloadKindOf(object: unknown): WorkloadKind | undefined {
  if (!isRecord(object) || typeof object.apiVersion !== 'string') return undefined;
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/', 2) : ['', object.apiVersion];
  return findWorkloadKind({ group, version, kind: object.kind });
}

/**
 * What the injector would warn about on every pod of this workload, and why.
 *
 * The warnings are injectPod's, unchanged and without a prefix naming the
 * workload: the longest already take 113 of the 120 characters the API server
 * advises, and kubectl prints them right with the object they belong to, as
 * it does Pod Security's. A template that opts out gives no warnings, as its
 * pods would get no injection.
 */
export function workloadWarnings(workload: unknown, settings: InjectionSettings): WorkloadResult {
  const kind = workloadKindOf(workload);
  if (kind === undefined) {
    return { reason: 'notAWorkload', message: `the object is not one of ${WORKLOAD_KINDS.map((w) => w.kind).join(', ')}`, warnings: [] };
  }
  const pod = podFromTemplate(valueAt(workload, kind.templatePath));
  const result = injectPod(pod, settings);
  switch (result.reason) {
    case 'notAPod': {
      const path = kind.templatePath.join('.');
      const problem = podShapeProblem(pod);
      return noResult(
        'noPodTemplate',
        problem === undefined ? `the ${kind.kind} has no ${path}.spec.containers list` : `the ${kind.kind}'s ${path}.${problem}`,
      );
    }
    case 'optedOut':
    case 'mirrorPod':
      return noResult('templateSkipped', `its pods would not be injected: ${result.message}`);
  }
  if (result.warnings.length === 0) {
    return noResult('templateClean', 'its pods would be injected with nothing to warn about');
  }
  return { reason: 'templateWarnings', message: `its pods would be injected with ${result.warnings.length} warning(s)`, warnings: result.warnings };
}

/**
 * The pod template of a workload injected, for manifests rendered offline
 * (`leaderhook inject`) instead of admitted through the webhook: the template
 * gets what each of its pods would get, so the pods come out the same, and
 * the webhook then finds them already injected. The patch is the pod's,
 * moved under the template's path; undefined when the object is not a
 * workload kind leaderhook knows.
 */
export function injectWorkload(workload: unknown, settings: InjectionSettings): WorkloadInjection | undefined {
  const kind = workloadKindOf(workload);
  if (kind === undefined) return undefined;
  const template = valueAt(workload, kind.templatePath);
  // Unlike podFromTemplate, no metadata is made up: the patch must add one where the template has none.
  const { metadata, spec } = (isRecord(template) ? template : {}) as V1PodTemplateSpec;
  const result = injectPod({ apiVersion: 'v1', kind: 'Pod', ...(metadata ? { metadata } : {}), spec }, settings);
  if (result.reason === 'notAPod') {
    return { reason: 'notAPod', message: `the ${kind.kind} has no ${kind.templatePath.join('.')}.spec.containers list`, patch: [], warnings: [] };
  }
  const prefix = `/${kind.templatePath.join('/')}`;
  return {
    reason: result.reason,
    message: result.message,
    patch: result.patch.map((op) => ({ ...op, path: prefix + op.path })),
    warnings: result.warnings,
  };
}

function noResult(reason: WorkloadReason, message: string): WorkloadResult {
  return { reason, message, warnings: [] };
}

/**
 * The pod a controller would create from the template: its metadata and spec.
 * The name, namespace and uid the pod gets later play no part in what the
 * injector decides, so none are made up here.
 */
function podFromTemplate(template: unknown): unknown {
  if (!isRecord(template)) return undefined;
  const { metadata, spec } = template as V1PodTemplateSpec;
  return { apiVersion: 'v1', kind: 'Pod', metadata: metadata ?? {}, spec };
}

function valueAt(object: unknown, path: readonly string[]): unknown {
  let value = object;
  for (const key of path) {
    if (!isRecord(value)) return undefined;
    value = value[key];
  }
  return value;
}
