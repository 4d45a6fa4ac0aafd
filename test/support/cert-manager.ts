/**
 * cert-manager for the local cluster, from its Go module: the CRDs its release
 * ships and a binary of its controller and cainjector (test/cert-manager).
 * Nothing here talks to a cluster, so test/run-all.sh calls it before the
 * tests enter the cluster's network namespace, which has no route to the
 * module proxy; test/support/cert-manager-process.ts runs the binary there.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

const MODULE = 'github.com/cert-manager/cert-manager';
/** The Go module of the binary; its go.mod pins the cert-manager version, CRDs included. */
export const certManagerModuleDir = path.join(import.meta.dirname, '../cert-manager');

/** The cert-manager version test/cert-manager/go.mod requires: the one source of it. */
export function certManagerVersion(): string {
  const goMod = readFileSync(path.join(certManagerModuleDir, 'go.mod'), 'utf8');
  const version = new RegExp(`^\\s*(?:require\\s+)?${MODULE.replaceAll('.', '\\.')}\\s+(v\\S+)`, 'm').exec(goMod)?.[1];
  if (version === undefined) throw new Error(`${certManagerModuleDir}/go.mod requires no ${MODULE}`);
  return version;
}

/**
 * The directory of cert-manager's CRDs as its release ships them (the
 * module's deploy/crds), downloaded into the Go module cache on first use.
 */
export function certManagerCrdDir(): string {
  const json = execFileSync('go', ['mod', 'download', '-json', `${MODULE}@${certManagerVersion()}`], { encoding: 'utf8', cwd: '/' });
  return path.join((JSON.parse(json) as { Dir: string }).Dir, 'deploy/crds');
}

/** Every file the binary is built from, in a stable order. */
function sourceFiles(dir = certManagerModuleDir): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && (e.name.endsWith('.go') || e.name === 'go.mod' || e.name === 'go.sum'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/**
 * The cert-manager binary (`controller` and `cainjector` subcommands), built
 * into ~/.cache/leaderhook/bin keyed by its sources like test/images/go-tool.sh
 * does, and reused while none of them changed. The first build compiles
 * client-go, controller-runtime and cert-manager: minutes on 2 cores.
 */
export function certManagerBinary(): string {
  const hash = createHash('sha256');
  for (const file of sourceFiles()) hash.update(path.relative(certManagerModuleDir, file)).update('\0').update(readFileSync(file));
  const cache = process.env.LEADERHOOK_CACHE ?? path.join(homedir(), '.cache', 'leaderhook');
  const binary = path.join(cache, 'bin', `cert-manager-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(binary)) return binary;
  mkdirSync(path.dirname(binary), { recursive: true });
  process.stderr.write(`building cert-manager ${certManagerVersion()} (test/cert-manager) into ${binary}\n`);
  try {
    execFileSync('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', `${binary}.tmp`, './cmd/cert-manager'], {
      cwd: certManagerModuleDir,
      env: { ...process.env, CGO_ENABLED: '0' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`go build ./cmd/cert-manager in ${certManagerModuleDir}: ${stderr || message}`);
  }
  renameSync(`${binary}.tmp`, binary);
  return binary;
}
