/**
 * The injector: a pure function from a submitted Pod and settings to a JSON
 * Patch. The webhook calls it for every admission; tests call it on golden
 * files; nothing here does I/O, reads the environment or looks at a clock.
 *
 * The patch is the diff of the raw submitted object against a mutated copy
 * (as controller-runtime's PatchResponseFromRaw and Pepr do), so no path is
 * ever built by hand and missing parents (no env, no initContainers, no
 * annotations) cannot produce a patch that fails to apply.
 *
 * The copy is copy-on-write: only the objects on the way to a change are new
 * (the pod, its metadata and spec, the annotations, a container whose env
 * grows, the initContainers and volumes lists); everything else, managedFields
 * above all, is shared with the submitted pod. And only the fields the
 * injector can change are diffed (TOUCHED), so the cost follows what changes,
 * not the size of the pod. On a 270 KB pod, a structuredClone and a
 * fast-json-patch compare of the whole object were four fifths of the
 * handler's time after JSON.parse (docs/performance.md).
 */
import type { V1Container, V1ContainerPort, V1EnvVar, V1Pod, V1ResourceRequirements, V1Volume } from '@kubernetes/client-node';
import type { Operation } from 'fast-json-patch';
import { annotations, observeAnnotationIsOn } from '../annotations.ts';
import { isRecord } from '../is-record.ts';
import { SERVICE_ACCOUNT_DIR } from '../kube/service-account.ts';
import { NONROOT_UID } from '../nonroot-user.ts';
import { diff } from './diff.ts';
import { hasGuaranteedResources, isGuaranteed } from './qos.ts';
import { isResourceQuantity } from './quantity.ts';
import type { InjectionReason, InjectionResult, InjectionSettings } from './types.ts';

export type { InjectionReason, InjectionResult, InjectionSettings } from './types.ts';

export const HOOK_CONTAINER_NAME = 'leaderhook-release';
export const HOOK_TOKEN_VOLUME_NAME = 'leaderhook-api-access';
/** The hook's containerPort when the pod asks for its metrics (annotation leaderhook.io/hook-metrics-port). */
export const HOOK_METRICS_PORT_NAME = 'hook-metrics';

export { annotations };

/** Set by the kubelet on the API object that mirrors a static pod. */
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
/** A projected token lives about an hour; the kubelet refreshes it well before. */
const TOKEN_EXPIRATION_SECONDS = 3607;
/** Kubernetes' own default when a pod does not say. */
const DEFAULT_GRACE_PERIOD_SECONDS = 30;

type Pod = V1Pod & { spec: NonNullable<V1Pod['spec']> };

/**
 * Decides what leaderhook adds to a pod (docs/design.md#what-the-webhook-adds-to-a-pod) and returns it as a patch.
 *
 * Idempotent: run on its own output it returns an empty patch. Run again after
 * another webhook changed the pod (reinvocation), it completes only what that
 * change needs: env on a new container, exactly one hook, hook still last.
 */
export function injectPod(submitted: unknown, settings: InjectionSettings): InjectionResult {
  if (!isPod(submitted)) {
    return skip(submitted as V1Pod, 'notAPod', 'the object has no spec.containers list, so it is not a Pod leaderhook can inject');
  }
  const problem = podShapeProblem(submitted);
  if (problem !== undefined) return skip(submitted, 'notAPod', `${problem}, so it is not a Pod leaderhook can inject`);
  const meta = submitted.metadata ?? {};
  if (meta.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) {
    return skip(submitted, 'mirrorPod', 'mirror pods of static pods are managed by the kubelet and never changed');
  }
  if (meta.labels?.[annotations.inject] === 'false' || meta.annotations?.[annotations.inject] === 'false') {
    return skip(submitted, 'optedOut', `the pod opts out with ${annotations.inject}: "false"`);
  }

  const warnings: string[] = [];
  // Copy-on-write from here: every function below replaces what it changes
  // in `pod` and never writes into an object it got from `submitted`.
  const pod: Pod = { ...submitted, spec: { ...submitted.spec, containers: submitted.spec.containers.map((c) => withDownwardEnv(c, warnings)) } };
  addReleaseHook(pod, settings, warnings);
  adjustGracePeriod(pod, settings, warnings);
  if (pod.spec.hostNetwork) {
    // A Lease identity is hostname_uuid, and this pod's hostname is the node's.
    warnings.push('leaderhook: hostNetwork pod: its Leases cannot name it, so only its ConfigMap locks are released early');
  }
  const wasInjected = meta.annotations?.[annotations.injected] !== undefined;
  // managedFields stay as they are: shared, never diffed, never patched.
  pod.metadata = { ...meta, annotations: { ...meta.annotations, [annotations.injected]: settings.version } };

  const patch = diffTouched(submitted, pod);
  if (patch.length === 0) {
    return { reason: 'alreadyInjected', message: 'the pod already carries everything leaderhook adds', patch, warnings, pod: submitted };
  }
  const reason: InjectionReason = wasInjected ? 'updated' : 'injected';
  const message = wasInjected
    ? 'completed an earlier injection after another change to the pod'
    : `added the release hook, downward env and grace period (leaderhook ${settings.version})`;
  return { reason, message, patch, warnings, pod };
}

/** Every field the injector may change, as [parent, field] of the pod. Nothing outside these is ever diffed. */
const TOUCHED = [
  ['metadata', 'annotations'],
  ['spec', 'containers'],
  ['spec', 'initContainers'],
  ['spec', 'volumes'],
  ['spec', 'terminationGracePeriodSeconds'],
] as const;

/**
 * The JSON Patch from `submitted` to `pod`, looking only at TOUCHED. A parent
 * the submitted pod lacks (a pod without metadata) is added whole. Inside a
 * field, the diff stops at every subtree shared by reference, so unchanged
 * containers, env entries and volumes cost one comparison each.
 */
function diffTouched(submitted: Pod, pod: Pod): Operation[] {
  const patch: Operation[] = [];
  const writtenWhole = new Set<string>();
  for (const [parent, field] of TOUCHED) {
    const before: unknown = submitted[parent];
    const after = pod[parent];
    if (before === after || writtenWhole.has(parent)) continue;
    if (!isRecord(before)) {
      patch.push({ op: before === undefined ? 'add' : 'replace', path: `/${parent}`, value: after });
      writtenWhole.add(parent);
      continue;
    }
    diff(before[field], (after as Record<string, unknown>)[field], `/${parent}/${field}`, patch);
  }
  return patch;
}

function isPod(value: unknown): value is Pod {
  if (typeof value !== 'object' || value === null) return false;
  const spec = (value as V1Pod).spec;
  return typeof spec === 'object' && spec !== null && Array.isArray(spec.containers);
}

/** A problem with a list of objects the injector looks up by name: not a list, an entry not an object, a name not a string. */
function namedListProblem(list: unknown, path: string): string | undefined {
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list)) return `${path} is not a list`;
  const index = list.findIndex((entry) => !isRecord(entry) || (entry.name != null && typeof entry.name !== 'string'));
  if (index < 0) return undefined;
  return isRecord(list[index]) ? `${path}[${index}].name is not a string` : `${path}[${index}] is not an object`;
}

/**
 * Which field the injector reads has not the type a Pod gives it, in the
 * words of its path from the pod; undefined when none does (or there is no
 * spec.containers list to speak of). The API server sends only pods it
 * decoded, so this meets hand-made reviews alone; the injector answers them
 * with this reason instead of throwing, which the user would see as an
 * internal webhook error. null counts as absent, as the injector reads it.
 */
export function podShapeProblem(pod: unknown): string | undefined {
  if (!isRecord(pod)) return undefined;
  const { metadata, spec } = pod;
  if (metadata !== undefined && metadata !== null) {
    if (!isRecord(metadata)) return 'metadata is not an object';
    const podAnnotations = metadata.annotations;
    if (podAnnotations !== undefined && podAnnotations !== null) {
      if (!isRecord(podAnnotations)) return 'metadata.annotations is not an object';
      const key = Object.keys(podAnnotations).find((k) => typeof podAnnotations[k] !== 'string');
      if (key !== undefined) return `metadata.annotations[${JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}...` : key)}] is not a string`;
    }
  }
  if (!isRecord(spec) || !Array.isArray(spec.containers)) return undefined;
  const containers = namedListProblem(spec.containers, 'spec.containers');
  if (containers !== undefined) return containers;
  for (const [i, container] of (spec.containers as Array<Record<string, unknown>>).entries()) {
    const { env, envFrom } = container;
    if (envFrom !== undefined && envFrom !== null && !Array.isArray(envFrom)) return `spec.containers[${i}].envFrom is not a list`;
    if (env === undefined || env === null) continue;
    if (!Array.isArray(env)) return `spec.containers[${i}].env is not a list`;
    const index = env.findIndex((entry) => !isRecord(entry));
    if (index >= 0) return `spec.containers[${i}].env[${index}] is not an object`;
  }
  const lists = namedListProblem(spec.initContainers, 'spec.initContainers') ?? namedListProblem(spec.volumes, 'spec.volumes');
  if (lists !== undefined) return lists;
  const grace = spec.terminationGracePeriodSeconds;
  if (grace !== undefined && grace !== null && !Number.isInteger(grace)) return 'spec.terminationGracePeriodSeconds is not a whole number';
  return undefined;
}

function skip(pod: V1Pod, reason: InjectionReason, message: string): InjectionResult {
  return { reason, message, patch: [], warnings: [], pod };
}

function fieldEnv(name: string, fieldPath: string): V1EnvVar {
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

/**
 * operator-lib's leader.Become needs POD_NAME and fails without it. An `env`
 * entry the author wrote is never overridden; an `envFrom` source cannot be
 * inspected here, and an `env` entry shadows it, so that case gets a warning.
 * Returns the container itself when its env stays as it is, else a copy.
 */
function withDownwardEnv(container: V1Container, warnings: string[]): V1Container {
  const wanted = [fieldEnv('POD_NAME', 'metadata.name'), fieldEnv('POD_NAMESPACE', 'metadata.namespace')];
  const env = container.env ?? [];
  const added: V1EnvVar[] = [];
  for (const entry of wanted) {
    const existing = env.find((e) => e.name === entry.name);
    if (!existing) {
      added.push(entry);
    } else if (existing.valueFrom?.fieldRef?.fieldPath !== entry.valueFrom?.fieldRef?.fieldPath) {
      warnings.push(`leaderhook: container "${container.name}": ${entry.name} is not ${entry.valueFrom?.fieldRef?.fieldPath}; kept as set`);
    }
  }
  if (added.length === 0) return container;
  if (container.envFrom?.length) {
    warnings.push(`leaderhook: container "${container.name}": injected ${added.map((e) => e.name).join(', ')} take precedence over envFrom`);
  }
  return { ...container, env: [...env, ...added] };
}

/**
 * The hook is a native sidecar (an init container with restartPolicy Always)
 * placed last, so that at termination it is stopped first, right after the
 * main containers (docs/design.md#why-a-native-sidecar-acting-on-sigterm). It is owned by leaderhook: re-rendered from the
 * settings on every call, which makes a second call a no-op.
 */
function addReleaseHook(pod: Pod, settings: InjectionSettings, warnings: string[]): void {
  const initContainers = pod.spec.initContainers ?? [];
  const others = initContainers.filter((c) => c.name !== HOOK_CONTAINER_NAME);
  // Fields the API server defaulted on an earlier round (terminationMessagePath,
  // ...) are kept, so a reinvocation does not fight the defaulting.
  // Its ports are leaderhook's too: none unless the pod asks for metrics.
  const earlier: Partial<V1Container> = { ...initContainers.find((c) => c.name === HOOK_CONTAINER_NAME) };
  delete earlier.ports;
  pod.spec.initContainers = [...others, { ...earlier, ...renderHook(pod, settings, warnings) }];

  // Our own projected token: the ServiceAccount admission plugin ran before
  // this webhook and mounted nothing into the hook, and with
  // automountServiceAccountToken: false it mounted nothing at all. Only the
  // hook mounts this volume; the operator's containers are left as they were.
  // Volumes are unordered: an existing one is renewed where it stands.
  const volumes = [...(pod.spec.volumes ?? [])];
  const existing = volumes.findIndex((v) => v.name === HOOK_TOKEN_VOLUME_NAME);
  if (existing >= 0) volumes[existing] = tokenVolume();
  else volumes.push(tokenVolume());
  pod.spec.volumes = volumes;
}

function renderHook(pod: Pod, settings: InjectionSettings, warnings: string[]): V1Container {
  const resources = hookResources(pod, settings.resources, warnings);
  const env = [fieldEnv('POD_NAME', 'metadata.name'), fieldEnv('POD_NAMESPACE', 'metadata.namespace'), fieldEnv('POD_UID', 'metadata.uid')];
  if (settings.observe) {
    env.push({ name: 'LEADERHOOK_OBSERVE', value: 'true' });
    warnIfObserveRefused(pod, warnings);
  }
  const metricsPort = hookMetricsPort(pod, warnings);
  if (metricsPort !== undefined) env.push({ name: 'LEADERHOOK_METRICS_PORT', value: String(metricsPort) });
  return {
    name: HOOK_CONTAINER_NAME,
    image: settings.image,
    imagePullPolicy: settings.imagePullPolicy,
    args: ['release'],
    env,
    ...(metricsPort === undefined ? {} : { ports: [hookMetricsContainerPort(pod, metricsPort)] }),
    restartPolicy: 'Always',
    resources,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: NONROOT_UID,
      runAsGroup: NONROOT_UID,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    terminationMessagePolicy: 'FallbackToLogsOnError',
    volumeMounts: [{ name: HOOK_TOKEN_VOLUME_NAME, mountPath: SERVICE_ACCOUNT_DIR, readOnly: true }],
  };
}

/**
 * A webhook in observe mode is the administrator's (a trial rollout, say),
 * and the hook keeps to it whatever the pod's leaderhook.io/observe says
 * (observeMode in src/releaser/rules.ts): a pod may turn observe mode on,
 * never off. An annotation that asks for it off gets this warning.
 */
function warnIfObserveRefused(pod: Pod, warnings: string[]): void {
  const value = pod.metadata?.annotations?.[annotations.observe];
  if (value === undefined || observeAnnotationIsOn(value)) return;
  warnings.push(`leaderhook: ignoring ${annotations.observe}: "${value}": observe mode is set for all pods; a pod cannot turn it off`);
}

/** The lowest port a process may bind without root or CAP_NET_BIND_SERVICE, unless the node lowers it. */
const FIRST_UNPRIVILEGED_PORT = 1024;

/**
 * The port the pod's annotation asks the hook to serve metrics on, or
 * undefined when it asks for none or for one the hook must not take: not a
 * port number, or a port (or the port name) another container of the pod
 * declares. The containers share the pod's network, and the hook starts
 * before the operator: a port taken by the hook would keep the operator from
 * binding it. A port nobody declares cannot be seen here.
 */
function hookMetricsPort(pod: Pod, warnings: string[]): number | undefined {
  const key = annotations.hookMetricsPort;
  const value = pod.metadata?.annotations?.[key];
  if (value === undefined) return undefined;
  const port = /^[0-9]{1,5}$/.test(value) ? Number(value) : 0;
  if (port < 1 || port > 65535) {
    warnings.push(`leaderhook: ignoring ${key}: "${value}" is not a port number (1-65535)`);
    return undefined;
  }
  const others = [...pod.spec.containers, ...(pod.spec.initContainers ?? []).filter((c) => c.name !== HOOK_CONTAINER_NAME)];
  for (const container of others) {
    // Read defensively: a hand-made review may carry anything here.
    const ports: unknown[] = Array.isArray(container.ports) ? container.ports : [];
    if (ports.some((p) => isRecord(p) && p.containerPort === port)) {
      warnings.push(`leaderhook: ignoring ${key}: container "${container.name}" already uses port ${port}`);
      return undefined;
    }
    if (ports.some((p) => isRecord(p) && p.name === HOOK_METRICS_PORT_NAME)) {
      warnings.push(`leaderhook: ignoring ${key}: container "${container.name}" already has a port named ${HOOK_METRICS_PORT_NAME}`);
      return undefined;
    }
  }
  if (port < FIRST_UNPRIVILEGED_PORT) {
    warnings.push(`leaderhook: hook metrics port ${port} is below 1024: the hook runs without root or capabilities and may not get it`);
  }
  return port;
}

/**
 * The named containerPort that shows the hook's metrics port (a PodMonitor
 * selects it by name). With hostNetwork the API server wants hostPort equal
 * to containerPort and defaults it so; it is set here, so a reinvocation
 * finds what it renders.
 */
function hookMetricsContainerPort(pod: Pod, port: number): V1ContainerPort {
  return { name: HOOK_METRICS_PORT_NAME, containerPort: port, protocol: 'TCP', ...(pod.spec.hostNetwork ? { hostPort: port } : {}) };
}

function tokenVolume(): V1Volume {
  return {
    name: HOOK_TOKEN_VOLUME_NAME,
    projected: {
      defaultMode: 0o444,
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: TOKEN_EXPIRATION_SECONDS } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  };
}

export { isResourceQuantity };

/**
 * The hook's CPU, request and limit alike, in a Guaranteed pod when no CPU
 * limit is configured: above what a hook uses idle and while it releases
 * (docs/scale.md), so that only its start is slowed (docs/design.md, "The
 * hook's resources").
 */
export const GUARANTEED_HOOK_CPU = '100m';

/**
 * The defaults as requests equal to limits, for a pod that is Guaranteed
 * without the hook and must stay so: memory at the configured limit (else the
 * request), CPU at the configured limit (else GUARANTEED_HOOK_CPU). Undefined
 * when no memory figure is configured at all.
 */
function guaranteedDefaults(defaults: V1ResourceRequirements): V1ResourceRequirements | undefined {
  const memory = defaults.limits?.memory ?? defaults.requests?.memory;
  if (memory === undefined) return undefined;
  const cpu = defaults.limits?.cpu ?? GUARANTEED_HOOK_CPU;
  return { ...defaults, requests: { ...defaults.requests, cpu, memory }, limits: { ...defaults.limits, cpu, memory } };
}

function hookResources(pod: Pod, defaults: V1ResourceRequirements, warnings: string[]): V1ResourceRequirements {
  const operatorContainers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].filter((c) => c.name !== HOOK_CONTAINER_NAME);
  // pod-level resources (spec.resources) decide the class themselves
  const guaranteed = pod.spec?.resources === undefined && isGuaranteed(operatorContainers);
  const base = (guaranteed && guaranteedDefaults(defaults)) || defaults;
  // A copy of the two maps an annotation may change (claims are never changed).
  const resources: V1ResourceRequirements = {
    ...base,
    ...(base.requests ? { requests: { ...base.requests } } : {}),
    ...(base.limits ? { limits: { ...base.limits } } : {}),
  };
  const overrides = [
    [annotations.hookCpuRequest, 'requests', 'cpu'],
    [annotations.hookMemoryRequest, 'requests', 'memory'],
    [annotations.hookCpuLimit, 'limits', 'cpu'],
    [annotations.hookMemoryLimit, 'limits', 'memory'],
  ] as const;
  for (const [annotation, kind, resource] of overrides) {
    const value = pod.metadata?.annotations?.[annotation];
    if (value === undefined) continue;
    if (!isResourceQuantity(value)) {
      warnings.push(`leaderhook: ignoring ${annotation}: "${value}" is not a quantity (like 50m, 64Mi)`);
      continue;
    }
    resources[kind] = { ...resources[kind], [resource]: value };
  }
  if (guaranteed && !hasGuaranteedResources(resources)) {
    warnings.push("leaderhook: this Guaranteed pod becomes Burstable: the release hook's requests and limits differ");
  }
  return resources;
}

/**
 * R1 needs the hook's SIGTERM to arrive clearly before the pod's deadline, so
 * the grace period has a floor; an optional cap keeps a stuck operator from
 * delaying failover for minutes. The pod's annotation wins over the floor
 * (a shorter grace period only leaves more to GC, as without leaderhook) but
 * not over the cap: an administrator who bounds drains with it can rely on it
 * for every injected pod (docs/security.md).
 */
function adjustGracePeriod(pod: Pod, settings: InjectionSettings, warnings: string[]): void {
  const current = pod.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  const requested = pod.metadata?.annotations?.[annotations.gracePeriod];
  const floor = settings.gracePeriodFloorSeconds;
  const cap = settings.gracePeriodCapSeconds;
  let wanted = current;
  let why = '';
  if (requested !== undefined) {
    if (/^[0-9]{1,9}$/.test(requested)) {
      wanted = Number(requested);
      why = 'as annotated';
      if (wanted < floor) {
        warnings.push(`leaderhook: annotated grace period ${wanted}s is below the ${floor}s floor; the lock may wait for GC`);
      } else if (cap !== undefined && wanted > cap) {
        warnings.push(`leaderhook: annotated grace period ${wanted}s is above the ${cap}s cap; capped to it`);
      }
    } else {
      warnings.push(`leaderhook: ignoring ${annotations.gracePeriod}: "${requested}" is not whole seconds`);
    }
  }
  if (!why && wanted < floor) {
    wanted = floor;
    why = 'floor: the release hook needs time after the operator stops';
  }
  if (cap !== undefined && wanted > cap) {
    wanted = cap;
    why = 'cap: a stuck operator must not delay failover';
  }
  if (wanted !== current) {
    pod.spec.terminationGracePeriodSeconds = wanted;
    warnings.push(`leaderhook: terminationGracePeriodSeconds ${current}s -> ${wanted}s (${why})`);
  }
}
