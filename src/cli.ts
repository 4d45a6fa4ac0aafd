#!/usr/bin/env node
/**
 * leaderhook: one binary, one image, two roles.
 *   leaderhook webhook   the mutating admission webhook
 *   leaderhook release   the release hook, run as a native sidecar in operator pods
 *   leaderhook version   print the version
 * Each command loads only its own modules, so the hook never carries the
 * webhook's HTTP stack into operator pods.
 */
import { parseFlags, UsageError, usage, type FlagSpec, type FlagValues } from './flags.ts';
import { version } from './version.ts';

export const webhookFlags: FlagSpec[] = [
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
  {
    name: 'hook-image',
    kind: 'string',
    env: 'LEADERHOOK_HOOK_IMAGE',
    default: `leaderhook:${version}`,
    help: 'image of the injected release hook (this image)',
  },
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
    help: 'CPU limit of the release hook, none by default (annotation leaderhook.io/hook-cpu-limit wins)',
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
    default: '10s',
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
  { name: 'body-limit', kind: 'integer', env: 'LEADERHOOK_BODY_LIMIT', default: String(3 * 1024 * 1024), help: 'largest AdmissionReview accepted, in bytes' },
];

export const releaseFlags: FlagSpec[] = [
  { name: 'pod-name', kind: 'string', env: 'POD_NAME', help: 'name of this pod (downward API)' },
  { name: 'pod-namespace', kind: 'string', env: 'POD_NAMESPACE', help: 'namespace of this pod (downward API)' },
  { name: 'pod-uid', kind: 'string', env: 'POD_UID', help: 'UID of this pod (downward API)' },
  {
    name: 'margin',
    kind: 'seconds',
    env: 'LEADERHOOK_MARGIN',
    default: '2s',
    help: "R1: release on SIGTERM only this long before the pod's deletion deadline (kubelet rounding + clock skew)",
  },
  {
    name: 'observe',
    kind: 'boolean',
    env: 'LEADERHOOK_OBSERVE',
    default: 'false',
    help: 'log and record Events for what would be released, release nothing (pod annotation leaderhook.io/observe wins)',
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
    default: '1500ms',
    help: 'give up a release on SIGTERM after this long (garbage collection remains the fallback)',
  },
  {
    name: 'wait-report-interval',
    kind: 'seconds',
    env: 'LEADERHOOK_WAIT_REPORT_INTERVAL',
    default: '60s',
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
];

const commands: Record<string, { summary: string; flags: FlagSpec[]; run: (values: FlagValues) => Promise<void> }> = {
  webhook: {
    summary: 'Serve the mutating admission webhook that injects the release hook into pods of opted-in namespaces.',
    flags: webhookFlags,
    run: async (values) => (await import('./commands/webhook.ts')).runWebhookCommand(values),
  },
  release: {
    summary: "Run the release hook: free this pod's leader lock once the operator has provably stopped, and locks whose holder can never run again.",
    flags: releaseFlags,
    run: async (values) => (await import('./commands/release.ts')).runReleaseCommand(values),
  },
  version: {
    summary: 'Print the version.',
    flags: [],
    run: async () => {
      process.stdout.write(`leaderhook ${version}\n`);
    },
  },
};

function topUsage(): string {
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(9)}${c.summary}`);
  return `Usage: leaderhook <command> [flags]\n\nCommands:\n${rows.join('\n')}\n\nRun 'leaderhook <command> --help' for a command's flags. Every flag can also be set by the environment variable its help names.\n`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(topUsage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') return main(['version']);
  const command = commands[name];
  if (!command) {
    process.stderr.write(`leaderhook: unknown command "${name}"\n\n${topUsage()}`);
    return 2;
  }
  let values: FlagValues;
  try {
    values = parseFlags(command.flags, rest, process.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`leaderhook ${name}: ${error.message}\n\n${usage(name, command.summary, command.flags)}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(usage(name, command.summary, command.flags));
    return 0;
  }
  try {
    await command.run(values);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`leaderhook ${name}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

const exitCode = await main(process.argv.slice(2));
if (exitCode !== 0) process.exitCode = exitCode;
