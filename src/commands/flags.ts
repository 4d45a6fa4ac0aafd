/** The flags of each command: parsing, --help and the tables of docs/reference.md all come from here. */
import { type FlagSpec, flagTable } from '../flags.ts';
import { GUARANTEED_HOOK_CPU } from '../injector/index.ts';
import { INJECTION_LABEL } from '../labels.ts';
import { releaseDefaults } from '../releaser/defaults.ts';

/**
 * The webhook's default --grace-period-floor: the grace period an injected pod
 * gets at least, and so the bound `release` checks its --margin against.
 */
export const DEFAULT_GRACE_PERIOD_FLOOR_SECONDS = 10;

const hookImageFlag = {
  name: 'hook-image',
  kind: 'string',
  env: 'LEADERHOOK_HOOK_IMAGE',
  help: "image of the injected release hook: this webhook's own image, with a tag or digest; required (--dev defaults it to leaderhook:<version>)",
} as const satisfies FlagSpec;

/** The injection settings besides the image, which `inject` explains in its own words. */
const hookSettingsFlags = flagTable([
  {
    name: 'hook-image-pull-policy',
    kind: 'string',
    env: 'LEADERHOOK_HOOK_IMAGE_PULL_POLICY',
    default: 'IfNotPresent',
    help: 'imagePullPolicy of the release hook: Always, IfNotPresent or Never',
  },
  {
    name: 'hook-cpu-request',
    kind: 'string',
    env: 'LEADERHOOK_HOOK_CPU_REQUEST',
    default: '10m',
    help: 'CPU request of the release hook (pod annotation leaderhook.io/hook-cpu-request wins)',
  },
  {
    name: 'hook-memory-request',
    kind: 'string',
    env: 'LEADERHOOK_HOOK_MEMORY_REQUEST',
    default: '48Mi',
    help: 'memory request of the release hook (annotation leaderhook.io/hook-memory-request wins)',
  },
  {
    name: 'hook-cpu-limit',
    kind: 'string',
    env: 'LEADERHOOK_HOOK_CPU_LIMIT',
    default: '',
    help: `CPU limit of the release hook, none by default; in a Guaranteed pod also its request, ${GUARANTEED_HOOK_CPU} when unset (annotation leaderhook.io/hook-cpu-limit wins)`,
  },
  {
    name: 'hook-memory-limit',
    kind: 'string',
    env: 'LEADERHOOK_HOOK_MEMORY_LIMIT',
    default: '96Mi',
    help: 'memory limit of the release hook (annotation leaderhook.io/hook-memory-limit wins)',
  },
  {
    name: 'grace-period-floor',
    kind: 'seconds',
    env: 'LEADERHOOK_GRACE_PERIOD_FLOOR',
    default: `${DEFAULT_GRACE_PERIOD_FLOOR_SECONDS}s`,
    help: 'terminationGracePeriodSeconds is raised to at least this',
  },
  {
    name: 'grace-period-cap',
    kind: 'seconds',
    env: 'LEADERHOOK_GRACE_PERIOD_CAP',
    default: '0s',
    help: 'when above 0, terminationGracePeriodSeconds is lowered to at most this',
  },
  {
    name: 'observe',
    kind: 'boolean',
    env: 'LEADERHOOK_OBSERVE',
    default: 'false',
    help: 'inject hooks in observe mode: they log and record Events for what they would release, and release nothing',
  },
]);

/**
 * What the webhook puts into every pod it injects. `leaderhook inject` reads
 * the same specs, so the offline injector and the webhook share defaults.
 */
export const injectionFlags = flagTable([hookImageFlag, ...hookSettingsFlags]);

export const webhookFlags = flagTable([
  { name: 'listen', kind: 'string', env: 'LEADERHOOK_LISTEN', default: '0.0.0.0:8443', help: 'address and port to serve HTTPS on' },
  {
    name: 'tls-cert-file',
    kind: 'string',
    env: 'LEADERHOOK_TLS_CERT_FILE',
    default: '/etc/leaderhook/tls/tls.crt',
    help: 'serving certificate (PEM), reloaded when it changes',
  },
  {
    name: 'tls-key-file',
    kind: 'string',
    env: 'LEADERHOOK_TLS_KEY_FILE',
    default: '/etc/leaderhook/tls/tls.key',
    help: 'private key of the serving certificate (PEM)',
  },
  {
    name: 'dev',
    kind: 'boolean',
    env: 'LEADERHOOK_DEV',
    default: 'false',
    help: 'development mode: create a CA and a serving certificate in --certs-dir when missing, serve on 127.0.0.1:8443',
  },
  { name: 'certs-dir', kind: 'string', env: 'LEADERHOOK_CERTS_DIR', default: 'certs', help: 'where --dev keeps its CA and serving certificate' },
  ...injectionFlags,
  { name: 'body-limit', kind: 'integer', env: 'LEADERHOOK_BODY_LIMIT', default: String(3 * 1024 * 1024), help: 'largest AdmissionReview accepted, in bytes' },
]);

export const releaseFlags = flagTable([
  { name: 'pod-name', kind: 'string', env: 'POD_NAME', help: 'name of this pod (downward API)' },
  { name: 'pod-namespace', kind: 'string', env: 'POD_NAMESPACE', help: 'namespace of this pod (downward API)' },
  { name: 'pod-uid', kind: 'string', env: 'POD_UID', help: 'UID of this pod (downward API)' },
  {
    name: 'margin',
    kind: 'seconds',
    env: 'LEADERHOOK_MARGIN',
    default: `${releaseDefaults.marginSeconds}s`,
    help: "R1: release on SIGTERM only this long before the pod's deletion deadline (kubelet rounding + clock skew)",
  },
  {
    name: 'observe',
    kind: 'boolean',
    env: 'LEADERHOOK_OBSERVE',
    default: 'false',
    help: 'log and record Events for what would be released, release nothing (pod annotation leaderhook.io/observe can turn it on, not off)',
  },
  {
    name: 'lock-name',
    kind: 'string',
    env: 'LEADERHOOK_LOCK_NAME',
    help: 'name of the ConfigMap lock (pod annotation leaderhook.io/lock wins); discovered when unset',
  },
  {
    name: 'release-timeout',
    kind: 'milliseconds',
    env: 'LEADERHOOK_RELEASE_TIMEOUT',
    default: `${releaseDefaults.releaseTimeoutMs}ms`,
    help: 'give up a release on SIGTERM after this long (garbage collection remains the fallback)',
  },
  {
    name: 'wait-report-interval',
    kind: 'seconds',
    env: 'LEADERHOOK_WAIT_REPORT_INTERVAL',
    default: `${releaseDefaults.waitReportIntervalSeconds}s`,
    help: 'how often a waiting standby reports who holds the lock and why it cannot be freed',
  },
  {
    name: 'metrics-port',
    kind: 'integer',
    env: 'LEADERHOOK_METRICS_PORT',
    default: '0',
    help: 'serve Prometheus metrics on this port; 0 (default) serves none',
  },
  {
    name: 'kubeconfig',
    kind: 'string',
    env: 'LEADERHOOK_KUBECONFIG',
    help: 'kubeconfig to use instead of the in-cluster service account (for running outside a pod)',
  },
]);

export const injectFlags = flagTable([
  {
    name: 'filename',
    short: 'f',
    kind: 'string',
    env: 'LEADERHOOK_INJECT_FILENAME',
    help: 'manifest to inject (YAML or JSON, several documents, kind: List); - reads stdin',
  },
  // The hook image as `inject` explains it: there is no --dev to default it.
  { ...hookImageFlag, help: 'image of the release hook: the leaderhook image your webhook runs, with a tag or digest; required' },
  ...hookSettingsFlags,
]);

/** How `check` and `version` print: lines for people, or one JSON document for scripts. */
const outputFlag = {
  name: 'output',
  short: 'o',
  kind: 'string',
  env: 'LEADERHOOK_OUTPUT',
  default: 'text',
  choices: ['text', 'json'],
  help: 'text, or json: one JSON document on stdout, for scripts',
} as const satisfies FlagSpec;

export const versionFlags = flagTable([outputFlag]);

export const checkFlags = flagTable([
  {
    name: 'kubeconfig',
    kind: 'string',
    env: 'KUBECONFIG',
    help: 'kubeconfig to use; unset: the first file of $KUBECONFIG, else ~/.kube/config, else the in-cluster service account',
  },
  { name: 'context', kind: 'string', env: 'LEADERHOOK_CONTEXT', help: "kubeconfig context to use instead of the file's current-context" },
  {
    name: 'namespace',
    kind: 'string',
    env: 'LEADERHOOK_NAMESPACE',
    help: `check only this namespace; unset: every namespace labelled ${INJECTION_LABEL}=enabled or required`,
  },
  {
    name: 'webhook-configuration',
    kind: 'string',
    env: 'LEADERHOOK_WEBHOOK_CONFIGURATION',
    default: 'leaderhook',
    help: "name of leaderhook's MutatingWebhookConfiguration; the webhook Service is the one it calls",
  },
  {
    name: 'tls-secret',
    kind: 'string',
    env: 'LEADERHOOK_TLS_SECRET',
    default: 'leaderhook-webhook-tls',
    help: "Secret in the webhook Service's namespace that holds the serving certificate (tls.crt, tls.key)",
  },
  {
    name: 'request-timeout',
    kind: 'milliseconds',
    env: 'LEADERHOOK_REQUEST_TIMEOUT',
    default: '10s',
    help: 'give up an API request after this long',
  },
  outputFlag,
]);
