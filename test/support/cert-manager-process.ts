/**
 * cert-manager's controller and cainjector as processes beside the local
 * cluster (inside its network namespace, with its admin kubeconfig), as the
 * cert-manager release runs them as pods: the controller issues the
 * Certificates of deploy/certificates.yaml, the cainjector fills the caBundle
 * of a MutatingWebhookConfiguration annotated cert-manager.io/inject-ca-from.
 * Importing this module refuses to load outside the namespace (kube.ts).
 *
 * The binary must exist before the tests enter the namespace:
 * test/run-all.sh builds it with certManagerBinary().
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../peers/webhook/process.ts';
import { certManagerBinary, certManagerCrdDir } from './cert-manager.ts';
import { broughtOwnCluster, kubeconfigPath, waitFor } from './kube.ts';
import { kubectl } from './leaderhook.ts';

export type CertManagerComponent = 'controller' | 'cainjector';

export interface CertManagerProcess {
  component: CertManagerComponent;
  child: ChildProcess;
  pid: number;
  /** stdout and stderr of the process (klog lines). */
  logFile: string;
  /** http://127.0.0.1:PORT, serving /livez and /readyz. */
  healthUrl: string;
}

export interface CertManager {
  controller: CertManagerProcess;
  cainjector: CertManagerProcess;
  logDir: string;
  /** Stops both by PID (SIGTERM, SIGKILL after 10 s); each releases its leader Lease on the way out. */
  stop(): Promise<void>;
}

export interface StartCertManagerOptions {
  /** Where the two log files go; a new temporary directory by default. */
  logDir?: string;
  /** Hold a Lease in kube-system (cert-manager-controller, cert-manager-cainjector-leader-election) before working; default true. */
  leaderElect?: boolean;
  /** How long each may take to report ready; default 60 s. */
  readyTimeoutMs?: number;
}

/** Applies the CRDs of the pinned cert-manager (server-side, as its release does) and waits until they are served. */
export function installCertManagerCrds(): void {
  const dir = certManagerCrdDir();
  for (const file of readdirSync(dir).filter((f) => f.startsWith('cert-manager.io_'))) {
    kubectl(['apply', '--server-side', '-f', path.join(dir, file)]);
  }
  kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/certificates.cert-manager.io',
    'crd/certificaterequests.cert-manager.io',
    'crd/issuers.cert-manager.io',
  ]);
}

/**
 * Starts the controller and the cainjector and resolves once both report
 * ready (leading, informer caches synced). cert-manager's CRDs must be
 * installed first (installCertManagerCrds): both refuse to start without them.
 */
export async function startCertManager(options: StartCertManagerOptions = {}): Promise<CertManager> {
  const binary = certManagerBinary();
  const logDir = options.logDir ?? mkdtempSync(path.join(tmpdir(), 'leaderhook-cert-manager-'));
  const started: CertManagerProcess[] = [];
  const stop = () => Promise.all(started.map((p) => stopProcess(p))).then(() => undefined);
  try {
    for (const component of ['controller', 'cainjector'] as const) {
      started.push(await spawnComponent(binary, component, logDir, options.leaderElect ?? true));
    }
    await Promise.all(started.map((p) => waitReady(p, options.readyTimeoutMs ?? 60_000)));
  } catch (error) {
    await stop();
    throw error;
  }
  const [controller, cainjector] = started as [CertManagerProcess, CertManagerProcess];
  return { controller, cainjector, logDir, stop };
}

async function spawnComponent(binary: string, component: CertManagerComponent, logDir: string, leaderElect: boolean): Promise<CertManagerProcess> {
  const port = await freePort();
  const logFile = path.join(logDir, `${component}.log`);
  const fd = openSync(logFile, 'a');
  const args = [
    component,
    `--kubeconfig=${kubeconfigPath}`,
    // The binary checks the namespace itself too; a cluster of one's own has none.
    `--netns=${broughtOwnCluster ? '' : (process.env.LEADERHOOK_NETNS ?? 'leaderhook')}`,
    `--health-addr=127.0.0.1:${port}`,
    `--leader-elect=${leaderElect}`,
  ];
  const child = spawn(binary, args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`starting ${binary} ${args.join(' ')} failed`);
  return { component, child, pid: child.pid, logFile, healthUrl: `http://127.0.0.1:${port}` };
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function logTail(p: CertManagerProcess, lines = 20): string {
  return readFileSync(p.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

async function waitReady(p: CertManagerProcess, timeoutMs: number): Promise<void> {
  let reason = 'no answer yet';
  const failed = (message: string, cause?: unknown) =>
    new Error(`cert-manager ${p.component} (pid ${p.pid}) ${message}; last /readyz: ${reason}; ${p.logFile} ends with:\n${logTail(p)}`, { cause });
  let outcome: 'ready' | 'exited';
  try {
    outcome = await waitFor(
      `cert-manager ${p.component} (pid ${p.pid}) to be ready`,
      async () => {
        if (exited(p.child)) return 'exited';
        const response = await fetch(`${p.healthUrl}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
        if (response === undefined) return false;
        reason = (await response.text()).trim();
        return response.ok && 'ready';
      },
      timeoutMs,
      200,
    );
  } catch (error) {
    throw failed(`was not ready within ${timeoutMs} ms`, error);
  }
  if (outcome === 'exited') throw failed(`exited (${p.child.exitCode ?? p.child.signalCode}) before it was ready`);
}

/** SIGTERM to the process by its PID, SIGKILL after `graceMs`; resolves once it exited. */
function stopProcess(p: CertManagerProcess, graceMs = 10_000): Promise<void> {
  if (exited(p.child)) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => process.kill(p.pid, 'SIGKILL'), graceMs);
    p.child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    process.kill(p.pid, 'SIGTERM');
  });
}
