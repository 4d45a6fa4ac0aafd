/**
 * Kubeconfig credential plugins (`user.exec`), which managed clusters use
 * (aws eks get-token, gke-gcloud-auth-plugin, kubelogin): run the command as
 * client-go does, with KUBERNETES_EXEC_INFO, and use the token or client
 * certificate of the ExecCredential it prints. Only `leaderhook check` loads
 * this; the hook authenticates with its service account.
 */
import { spawn } from 'node:child_process';
import { isAbsolute, resolve } from 'node:path';
import type { ClusterConfig, ExecPlugin } from '../kube/config.ts';
import { staticToken } from '../kube/token.ts';

/** Plugins may log in over the network; one that has not answered by then will not. */
const PLUGIN_TIMEOUT_MS = 60_000;

interface ExecCredential {
  status?: { token?: string; clientCertificateData?: string; clientKeyData?: string };
}

/** client-go resolves a command with a path separator from the kubeconfig's directory, a bare name from PATH. */
function commandPath(plugin: ExecPlugin): string {
  return plugin.command.includes('/') && !isAbsolute(plugin.command) ? resolve(plugin.dir, plugin.command) : plugin.command;
}

function execInfo(plugin: ExecPlugin, config: ClusterConfig): string {
  const cluster = plugin.provideClusterInfo
    ? {
        cluster: {
          server: config.server.href.replace(/\/$/, ''),
          ...(config.ca ? { 'certificate-authority-data': config.ca.toString('base64') } : {}),
          ...(config.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
          ...(config.servername ? { 'tls-server-name': config.servername } : {}),
        },
      }
    : {};
  return JSON.stringify({ apiVersion: plugin.apiVersion, kind: 'ExecCredential', spec: { interactive: false, ...cluster } });
}

function runPlugin(plugin: ExecPlugin, config: ClusterConfig): Promise<string> {
  const command = commandPath(plugin);
  const env = { ...process.env, ...Object.fromEntries(plugin.env.map((e) => [e.name, e.value])), KUBERNETES_EXEC_INFO: execInfo(plugin, config) };
  return new Promise((resolvePromise, reject) => {
    // stderr is the user's: plugins print their own hints and errors there.
    const child = spawn(command, plugin.args, { env, stdio: ['ignore', 'pipe', 'inherit'], timeout: PLUGIN_TIMEOUT_MS });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      const hint = error.code === 'ENOENT' && plugin.installHint ? `: ${plugin.installHint.trim()}` : '';
      reject(new Error(`credential plugin ${command} (${config.source}): ${error.code ?? error.message}${hint}`));
    });
    child.on('close', (code, signal) => {
      if (code === 0) resolvePromise(stdout);
      else reject(new Error(`credential plugin ${command} (${config.source}) exited with ${signal ?? code}`));
    });
  });
}

/** The configuration with the plugin's credential in it; unchanged without a plugin. */
export async function withExecCredential(config: ClusterConfig): Promise<ClusterConfig> {
  const plugin = config.exec;
  if (!plugin) return config;
  const stdout = await runPlugin(plugin, config);
  let credential: ExecCredential;
  try {
    credential = JSON.parse(stdout) as ExecCredential;
  } catch (error) {
    throw new Error(`credential plugin ${plugin.command} (${config.source}): its output is not an ExecCredential: ${(error as Error).message}`);
  }
  const { token, clientCertificateData, clientKeyData } = credential.status ?? {};
  if (token) return { ...config, token: staticToken(token) };
  if (clientCertificateData && clientKeyData) return { ...config, cert: Buffer.from(clientCertificateData), key: Buffer.from(clientKeyData) };
  throw new Error(`credential plugin ${plugin.command} (${config.source}): its ExecCredential has neither a token nor a client certificate and key`);
}
