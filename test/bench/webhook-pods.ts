/**
 * The AdmissionReviews the webhook benchmark posts: the kubebuilder pod of
 * test/testdata/admission, and a generated large pod as the API server would
 * send it for a CREATE — 20 containers with 100 env entries each, 30 volumes,
 * every defaulted field, and full managedFields (the API server's field
 * manager writes them before admission runs, so mutating webhooks get them).
 * Deterministic: the same bytes on every run.
 */
import { readFileSync } from 'node:fs';

export const KUBEBUILDER_REVIEW = new URL('../testdata/admission/kubebuilder-pod.review.json', import.meta.url);

export function kubebuilderReview(): Buffer {
  return readFileSync(KUBEBUILDER_REVIEW);
}

type Json = { [key: string]: unknown };

const CONTAINERS = 20;
const ENV_PER_CONTAINER = 100;
const VOLUMES = 30;
const MOUNTS_PER_CONTAINER = 3;

/** managedFields' FieldsV1 for a list entry keyed by name: `k:{"name":"x"}`. */
function byName(name: string): string {
  return `k:${JSON.stringify({ name })}`;
}

/** The FieldsV1 set of every field of `value` (objects as `f:` maps, lists of named entries as `k:`, other lists as leaves). */
function fieldsOf(value: unknown): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const fields: Json = {};
  for (const [key, child] of Object.entries(value)) {
    if (Array.isArray(child) && child.every((c) => typeof c === 'object' && c !== null && typeof (c as Json).name === 'string')) {
      const entries: Json = {};
      for (const entry of child as Json[]) entries[byName(entry.name as string)] = { '.': {}, ...fieldsOf(entry) };
      fields[`f:${key}`] = entries;
    } else if (typeof child === 'object' && child !== null && !Array.isArray(child)) {
      fields[`f:${key}`] = { '.': {}, ...fieldsOf(child) };
    } else {
      fields[`f:${key}`] = {};
    }
  }
  return fields;
}

function volume(i: number): Json {
  const name = `data-${i}`;
  switch (i % 5) {
    case 0:
      return { name, configMap: { name: `app-config-${i}`, defaultMode: 420, items: [{ key: 'config.yaml', path: 'config.yaml' }] } };
    case 1:
      return { name, secret: { secretName: `app-secret-${i}`, defaultMode: 420 } };
    case 2:
      return { name, emptyDir: { sizeLimit: '1Gi' } };
    case 3:
      return { name, persistentVolumeClaim: { claimName: `claim-${i}` } };
    default:
      return {
        name,
        projected: {
          defaultMode: 420,
          sources: [
            { configMap: { name: `bundle-${i}` } },
            { secret: { name: `bundle-secret-${i}` } },
            { downwardAPI: { items: [{ path: 'labels', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.labels' } }] } },
          ],
        },
      };
  }
}

function env(c: number, i: number): Json {
  const name = `ENV_${i}`;
  if (i % 20 === 19) return { name, valueFrom: { configMapKeyRef: { name: `app-config-${c}`, key: `setting-${i}`, optional: true } } };
  if (i % 20 === 18) return { name, valueFrom: { secretKeyRef: { name: `app-secret-${c}`, key: `password-${i}` } } };
  return { name, value: `v${i}` };
}

function container(c: number): Json {
  return {
    name: `worker-${c}`,
    image: `registry.example.test/platform/worker-${c}:v1.${c}.0`,
    command: ['/usr/local/bin/worker'],
    args: [`--shard=${c}`, '--metrics-bind-address=:8080', '--health-probe-bind-address=:8081'],
    ports: [
      { name: 'metrics', containerPort: 8080, protocol: 'TCP' },
      { name: 'probes', containerPort: 8081, protocol: 'TCP' },
    ],
    env: Array.from({ length: ENV_PER_CONTAINER }, (_, i) => env(c, i)),
    resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '50m', memory: '64Mi' } },
    volumeMounts: Array.from({ length: MOUNTS_PER_CONTAINER }, (_, m) => {
      const v = (c + m * 5) % VOLUMES;
      // The API server leaves out readOnly: false (omitempty), so only true is written.
      return { name: `data-${v}`, mountPath: `/var/lib/app/data-${v}`, ...(v % 5 !== 2 ? { readOnly: true } : {}) };
    }),
    livenessProbe: {
      httpGet: { path: '/healthz', port: 8081, scheme: 'HTTP' },
      initialDelaySeconds: 15,
      timeoutSeconds: 1,
      periodSeconds: 20,
      successThreshold: 1,
      failureThreshold: 3,
    },
    readinessProbe: {
      httpGet: { path: '/readyz', port: 8081, scheme: 'HTTP' },
      initialDelaySeconds: 5,
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
    securityContext: { capabilities: { drop: ['ALL'] }, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true },
  };
}

function largePod(): Json {
  const spec: Json = {
    volumes: Array.from({ length: VOLUMES }, (_, i) => volume(i)),
    containers: Array.from({ length: CONTAINERS }, (_, c) => container(c)),
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    serviceAccountName: 'platform-workers',
    serviceAccount: 'platform-workers',
    securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    schedulerName: 'default-scheduler',
    tolerations: [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ],
    priority: 0,
    enableServiceLinks: true,
    preemptionPolicy: 'PreemptLowerPriority',
  };
  const metadata: Json = {
    generateName: 'platform-workers-6d8f7c9b5-',
    namespace: 'platform',
    labels: Object.fromEntries([
      ['app.kubernetes.io/name', 'platform-workers'],
      ['pod-template-hash', '6d8f7c9b5'],
      ...Array.from({ length: 8 }, (_, i) => [`example.test/label-${i}`, `value-${i}`]),
    ]),
    annotations: { 'kubectl.kubernetes.io/default-container': 'worker-0', 'example.test/owner': 'platform-team' },
    ownerReferences: [
      {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        name: 'platform-workers-6d8f7c9b5',
        uid: '3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
  const { namespace: _namespace, ...ownedMetadata } = metadata;
  metadata.managedFields = [
    {
      manager: 'kube-controller-manager',
      operation: 'Update',
      apiVersion: 'v1',
      time: '2026-11-30T12:00:00Z',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': fieldsOf(ownedMetadata), 'f:spec': fieldsOf(spec) },
    },
  ];
  return { kind: 'Pod', apiVersion: 'v1', metadata, spec, status: {} };
}

function review(object: Json): Json {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '7e4b1f0c-2a3d-4c5e-9f60-718293a4b5c6',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'platform',
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller', groups: ['system:serviceaccounts', 'system:authenticated'] },
      object,
      oldObject: null,
      dryRun: false,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  };
}

/**
 * The large pod's review: 271 KB, 60 % of it managedFields. Env entries
 * cost ~90 bytes each with their managedFields, so 2,000 of them alone are
 * ~180 KB; names and values are kept short to stay near 250 KB.
 */
export function largePodReview(): Buffer {
  return Buffer.from(JSON.stringify(review(largePod())));
}

/** The pod inside a review body. */
export function podOf(body: Buffer): Json {
  return (JSON.parse(body.toString('utf8')) as { request: { object: Json } }).request.object;
}
