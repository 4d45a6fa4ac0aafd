import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SERVICE_ACCOUNT_DIR } from './service-account.ts';
import { fileToken, staticToken, type TokenSource } from './token.ts';

/** How to reach one API server, and as whom. */
export interface ClusterConfig {
  /** Base URL, e.g. https://10.96.0.1:443 */
  server: URL;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** TLS server name to verify, when it differs from the URL's host. */
  servername?: string;
  insecureSkipTlsVerify?: boolean;
  token?: TokenSource;
  /** Default namespace (the pod's own, in a cluster). */
  namespace?: string;
  /** Where this configuration came from, for log lines and errors. */
  source: string;
  /**
   * The kubeconfig user's credential plugin, when it has one: data only. The
   * hook never runs it (it has its service account); `leaderhook check`
   * does, as kubectl would (src/check/exec-credential.ts).
   */
  exec?: ExecPlugin;
}

/** A kubeconfig `user.exec` (client.authentication.k8s.io): a command that prints an ExecCredential. */
export interface ExecPlugin {
  apiVersion: string;
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  provideClusterInfo: boolean;
  installHint?: string;
  /** The kubeconfig's directory: a relative command path is resolved from it. */
  dir: string;
}

function readOrThrow(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`reading ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
}

/**
 * The configuration every pod gets: the `kubernetes` Service from env, the
 * cluster CA, the service-account token (re-read as the kubelet rotates it)
 * and the pod's namespace, all from the projected service-account volume.
 */
export function inClusterConfig(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): ClusterConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error('in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not running in a pod?)');
  }
  const bracketed = host.includes(':') ? `[${host}]` : host;
  let namespace: string | undefined;
  try {
    namespace = readFileSync(`${dir}/namespace`, 'utf8').trim() || undefined;
  } catch {
    // POD_NAMESPACE from the downward API covers this
  }
  return {
    server: new URL(`https://${bracketed}:${port}`),
    ca: readOrThrow(`${dir}/ca.crt`, 'cluster CA'),
    token: fileToken(`${dir}/token`),
    ...(namespace ? { namespace } : {}),
    source: 'in-cluster',
  };
}

interface KubeconfigFile {
  'current-context'?: string;
  clusters?: { name: string; cluster: Record<string, unknown> }[];
  users?: { name: string; user: Record<string, unknown> }[];
  contexts?: { name: string; context: { cluster?: string; user?: string; namespace?: string } }[];
}

/**
 * A kubeconfig file, minimal: one context's server, CA, client certificate
 * or token (inline, from files, or `tokenFile`). An exec plugin is read
 * but not run (ClusterConfig.exec); auth-provider plugins are not supported —
 * the hook runs with a service account. The YAML
 * parser is loaded only here, and only for a file that is not JSON, so the
 * in-cluster path never pays for it.
 */
export async function kubeconfigConfig(path: string, contextName?: string): Promise<ClusterConfig> {
  const text = readOrThrow(path, 'kubeconfig').toString('utf8');
  let doc: KubeconfigFile;
  try {
    // JSON is YAML too; a JSON kubeconfig (as tools write them) needs no YAML parser
    doc = text.trimStart().startsWith('{') ? (JSON.parse(text) as KubeconfigFile) : ((await import('yaml')).parse(text) as KubeconfigFile);
  } catch (err) {
    throw new Error(`parsing kubeconfig ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (!doc || typeof doc !== 'object') throw new Error(`parsing kubeconfig ${path}: not a YAML mapping`);
  const name = contextName ?? doc['current-context'];
  const context = doc.contexts?.find((c) => c.name === name)?.context;
  if (!context) throw new Error(`kubeconfig ${path}: context ${JSON.stringify(name)} not found`);
  const cluster = doc.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (!cluster) throw new Error(`kubeconfig ${path}: cluster ${JSON.stringify(context.cluster)} not found`);
  const user = doc.users?.find((u) => u.name === context.user)?.user ?? {};
  const base = dirname(path);
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const material = (inline: unknown, file: unknown, what: string): Buffer | undefined => {
    const data = str(inline);
    if (data) return Buffer.from(data, 'base64');
    const f = str(file);
    return f ? readOrThrow(resolve(base, f), `${what} (kubeconfig ${path})`) : undefined;
  };
  const server = str(cluster.server);
  if (!server) throw new Error(`kubeconfig ${path}: cluster ${JSON.stringify(context.cluster)} has no server`);
  let token: TokenSource | undefined;
  const inlineToken = str(user.token);
  const tokenPath = str(user.tokenFile);
  if (inlineToken) token = staticToken(inlineToken);
  else if (tokenPath) token = fileToken(resolve(base, tokenPath));
  const config: ClusterConfig = {
    server: new URL(server),
    source: `kubeconfig ${path} context ${name}`,
  };
  const ca = material(cluster['certificate-authority-data'], cluster['certificate-authority'], 'cluster CA');
  const cert = material(user['client-certificate-data'], user['client-certificate'], 'client certificate');
  const key = material(user['client-key-data'], user['client-key'], 'client key');
  if (ca) config.ca = ca;
  if (cert) config.cert = cert;
  if (key) config.key = key;
  if (token) config.token = token;
  if (cluster['insecure-skip-tls-verify'] === true) config.insecureSkipTlsVerify = true;
  const servername = str(cluster['tls-server-name']);
  if (servername) config.servername = servername;
  if (context.namespace) config.namespace = context.namespace;
  const exec = user.exec as Record<string, unknown> | undefined;
  const command = str(exec?.command);
  if (exec && command) {
    config.exec = {
      apiVersion: str(exec.apiVersion) ?? 'client.authentication.k8s.io/v1',
      command,
      args: Array.isArray(exec.args) ? exec.args.map(String) : [],
      env: Array.isArray(exec.env) ? (exec.env as { name: string; value: string }[]) : [],
      provideClusterInfo: exec.provideClusterInfo === true,
      ...(str(exec.installHint) ? { installHint: str(exec.installHint) } : {}),
      dir: base,
    };
  }
  return config;
}
