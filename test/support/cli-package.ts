/**
 * The CLI's npm package as a user gets it: packed by the release's own path
 * (`scripts/release.sh --only cli`) and installed with `npm install -g
 * --prefix`, so that its bin/ holds leaderhook and kubectl-leaderhook.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { version } from '../../src/version.ts';

const repo = path.join(import.meta.dirname, '../..');

export interface InstalledCli {
  prefix: string;
  /** The installed package's folder (package.json, dist/). */
  root: string;
  bin(name: 'leaderhook' | 'kubectl-leaderhook'): string;
}

/** Packs the CLI into `out` (no network needed) and returns the tarball, `out`/leaderhook-VERSION.tgz. */
export function packCli(out: string): string {
  execFileSync('bash', [path.join(repo, 'scripts/release.sh'), '--only', 'cli', '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  return path.join(out, `leaderhook-${version}.tgz`);
}

/** Installs `tarball` into the empty `prefix`; its dependencies come from the npm registry. */
export function installCli(tarball: string, prefix: string): InstalledCli {
  execFileSync('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', tarball], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return { prefix, root: path.join(prefix, 'lib/node_modules/leaderhook'), bin: (name) => path.join(prefix, 'bin', name) };
}

/**
 * This checkout's CLI, installed once per package content into the project's
 * cache: the cluster tests run inside a network namespace without the
 * registry, so a run outside it installs first (packing needs no network,
 * and the same tree packs to the same bytes).
 */
export function installedCli(): InstalledCli {
  const scratch = mkdtempSync(path.join(tmpdir(), 'leaderhook-cli-'));
  try {
    const tarball = packCli(scratch);
    const key = createHash('sha256').update(readFileSync(tarball)).digest('hex').slice(0, 16);
    const cache = path.join(process.env.LEADERHOOK_CACHE || path.join(homedir(), '.cache/leaderhook'), 'cli-package');
    const prefix = path.join(cache, key);
    if (!existsSync(path.join(prefix, 'bin/leaderhook'))) {
      mkdirSync(cache, { recursive: true });
      const partial = mkdtempSync(path.join(cache, `.${key}-`));
      installCli(tarball, partial);
      rmSync(prefix, { recursive: true, force: true });
      renameSync(partial, prefix);
    }
    return { prefix, root: path.join(prefix, 'lib/node_modules/leaderhook'), bin: (name) => path.join(prefix, 'bin', name) };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
