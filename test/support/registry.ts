/**
 * The local cluster's image registry (test/cluster/up.sh runs it inside the
 * network namespace, TLS from the cluster CA, its address and CA in
 * $STATE/env) and what the registry tests do with it: make a release folder
 * as `npm run release` lays it out, publish it with scripts/publish.sh, take
 * a repository's images off the node, read a pod's pull events, and stop the
 * registry and start it again.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CoreV1Event } from '@kubernetes/client-node';
import { broughtOwnCluster, clusterStateDir, core } from './kube.ts';
import { waitFor } from './wait.ts';
import { goTool, repo } from './tools.ts';

/** host:port of the local cluster's registry (test/cluster/up.sh writes it to $STATE/env). */
export const registryHost = process.env.LEADERHOOK_REGISTRY;
/** The CA (PEM) that signed the registry's certificate. */
export const registryCa = process.env.LEADERHOOK_REGISTRY_CA;

/** Why the registry tests cannot run here, or false when they can. */
export function registryMissing(): string | false {
  // They take images off the node's containerd and stop the registry by its PID: things only the local cluster lets a test do.
  if (broughtOwnCluster) return "the registry tests need the local cluster's containerd and registry processes";
  if (!registryHost || !registryCa) {
    return 'no LEADERHOOK_REGISTRY in the cluster env: run test/cluster/up.sh (which starts the registry) and the tests through test/cluster/in-netns.sh';
  }
  return false;
}

/** A command's stdout; on failure an Error that carries its stderr. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, { cwd: repo, encoding: 'utf8', env, maxBuffer: 16 * 1024 * 1024 });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${result.status ?? result.signal}: ${(result.stderr || result.error?.message || '').trim()}`);
  }
  return result.stdout;
}

/** skopeo's trust of the registry: a directory holding the CA as *.crt, made once. */
let certDir: string | undefined;
function skopeoCertDir(): string {
  if (certDir === undefined) {
    const dir = mkdtempSync(path.join(tmpdir(), 'leaderhook-registry-certs-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(path.join(dir, 'ca.crt'), readFileSync(registryCa!));
    certDir = dir;
  }
  return certDir;
}

/** `ctr` on the node's containerd, in the namespace the kubelet's images live in. */
function ctr(args: string[]): string {
  const address = process.env.CONTAINERD_ADDRESS;
  if (!address) throw new Error('CONTAINERD_ADDRESS is not set: run the tests through test/cluster/in-netns.sh');
  return run('ctr', ['--address', address, '--namespace', 'k8s.io', ...args]);
}

/** The names the node's containerd holds images under. */
export function nodeImages(): string[] {
  return ctr(['images', 'ls', '-q']).split('\n').filter(Boolean);
}

/**
 * Takes every name of `repository` (`host/path`, tags and digests) off the
 * node: the kubelet's image garbage collection is off in the local cluster,
 * so what a test pulled would stay for good.
 */
export function removeRepositoryFromNode(repository: string): void {
  const names = nodeImages().filter((name) => name.startsWith(`${repository}:`) || name.startsWith(`${repository}@`));
  if (names.length > 0) ctr(['images', 'rm', ...names]);
}

export interface ReleaseDir {
  dir: string;
  version: string;
  imageArchive: string;
  chartArchive: string;
}

/**
 * A release folder of `version`, laid out as `npm run release` makes it
 * (leaderhook-V.oci.tar, charts/leaderhook-V.tgz, SHA256SUMS): the image is
 * `sourceImage` as the node's containerd holds it (scripts/build-local-image.sh
 * imported it), exported as an OCI archive; the chart is charts/leaderhook
 * packaged at that version, its appVersion too.
 */
export function makeReleaseDir(version: string, sourceImage: string): ReleaseDir {
  const dir = mkdtempSync(path.join(tmpdir(), 'leaderhook-release-'));
  mkdirSync(path.join(dir, 'charts'));
  const imageArchive = `leaderhook-${version}.oci.tar`;
  const chartArchive = `charts/leaderhook-${version}.tgz`;
  // ctr writes an OCI image layout (index.json, blobs/) as a tar: what skopeo's oci-archive: reads.
  ctr(['images', 'export', path.join(dir, imageArchive), sourceImage]);
  run(goTool('helm'), [
    'package',
    path.join(repo, 'charts/leaderhook'),
    '--version',
    version,
    '--app-version',
    version,
    '--destination',
    path.join(dir, 'charts'),
  ]);
  const sums = [imageArchive, chartArchive].map(
    (file) =>
      `${createHash('sha256')
        .update(readFileSync(path.join(dir, file)))
        .digest('hex')}  ${file}\n`,
  );
  writeFileSync(path.join(dir, 'SHA256SUMS'), sums.join(''));
  return { dir, version, imageArchive, chartArchive };
}

/**
 * Runs scripts/publish.sh as a maintainer would, trusting the cluster CA, to
 * `registry` (host:port[/path], the registry's root by default); returns its
 * exit and output.
 */
export function publish(dir: string, extraArgs: string[] = [], registry = registryHost!): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync('bash', [path.join(repo, 'scripts/publish.sh'), '--ca-file', registryCa!, ...extraArgs, dir, registry], {
    cwd: repo,
    encoding: 'utf8',
    env: { ...process.env, HELM: goTool('helm') },
    timeout: 300_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Copies an image the registry has under another tag, registry to registry. */
export function retag(from: string, to: string): void {
  const certs = skopeoCertDir();
  run('skopeo', ['copy', '--quiet', '--all', '--src-cert-dir', certs, '--dest-cert-dir', certs, `docker://${from}`, `docker://${to}`]);
}

/** The events of one pod, oldest first. */
export async function podEvents(namespace: string, pod: string): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${pod}` });
  return list.items.sort((a, b) => eventTime(a) - eventTime(b));
}

function eventTime(event: CoreV1Event): number {
  const at = event.lastTimestamp ?? event.eventTime ?? event.metadata?.creationTimestamp;
  return at ? new Date(at).getTime() : 0;
}

export type PullOutcome = 'pulled' | 'present';

/**
 * What the kubelet's Pulled events say of `image` for one container of a
 * pod (`spec.containers{NAME}` or `spec.initContainers{NAME}`): "Successfully
 * pulled image" is a pull, "already present on machine" is none.
 */
export function pullOutcomes(events: readonly CoreV1Event[], fieldPath: string, image: string): PullOutcome[] {
  return events
    .filter((e) => e.reason === 'Pulled' && e.involvedObject.fieldPath === fieldPath && (e.message ?? '').includes(`"${image}"`))
    .map((e) => (/^Successfully pulled image /.test(e.message ?? '') ? 'pulled' : 'present'));
}

const pidDir = path.join(clusterStateDir, 'pids');

/** The registry's PID as up.sh recorded it, if that process still runs that program (a PID is reused once it is gone). */
export function registryPid(): number | undefined {
  const pidFile = path.join(pidDir, 'registry.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const program = readFileSync(path.join(pidDir, 'registry.cmd'), 'utf8').trim();
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    return cmdline.includes(program) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Stops the local cluster's registry: SIGTERM to the PID up.sh recorded, then waits until it has exited. */
export async function stopRegistry(): Promise<void> {
  const pid = registryPid();
  if (pid === undefined) throw new Error(`stopRegistry: no running registry recorded in ${pidDir}/registry.pid`);
  process.kill(pid, 'SIGTERM');
  await waitFor(`registry (pid ${pid}) to exit`, async () => !existsSync(`/proc/${pid}`), 15_000, 100);
}

/**
 * Starts the registry again the way the cluster started it: test/cluster/up.sh,
 * which keeps what runs and starts what does not, with the same command line
 * and configuration, then waits for its /v2/.
 */
export function startRegistry(): void {
  execFileSync('bash', [path.join(repo, 'test/cluster/up.sh')], {
    cwd: repo,
    env: { ...process.env, LEADERHOOK_CLUSTER_DIR: clusterStateDir },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 300_000,
  });
  if (registryPid() === undefined) throw new Error('test/cluster/up.sh ran, but no registry runs');
}
