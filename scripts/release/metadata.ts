/**
 * What every artifact of a release is stamped with, computed once so that
 * the image's labels, its build-info.json and the npm package's agree:
 *
 *   version   package.json's (src/version.ts)
 *   revision  the commit (git rev-parse HEAD), with -dirty when the tree has
 *             uncommitted changes or untracked files: such a build is marked,
 *             not refused, so that the tests' image can be built mid-change
 *   created   $SOURCE_DATE_EPOCH, else the commit's time: the same tree gives
 *             the same image id, so an unchanged build is a cache hit
 *   source    package.json's repository, else git's origin remote (without
 *             credentials), else empty
 *
 *   node scripts/release/metadata.ts    prints version=…, revision=…, created=…, source=… lines
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gitRevision } from '../../src/build-info.ts';
import { version } from '../../src/version.ts';

export interface ReleaseMetadata {
  version: string;
  revision: string;
  created: string;
  source: string;
}

export const repoRoot = resolve(import.meta.dirname, '../..');

function git(repo: string, ...args: string[]): string | undefined {
  try {
    return execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A repository URL fit for a label: https for git's scp-like form, no `git+` prefix, no user or token. */
export function publicUrl(url: string): string {
  const plain = url.replace(/^git\+/, '');
  const scp = /^(?:[^@/:]+@)?([^:/]+):(?!\/\/)(.+)$/.exec(plain);
  if (scp) return `https://${scp[1]}/${scp[2]}`;
  try {
    const parsed = new URL(plain);
    parsed.username = '';
    parsed.password = '';
    return parsed.href;
  } catch {
    return '';
  }
}

export function releaseMetadata(env: NodeJS.ProcessEnv = process.env): ReleaseMetadata {
  const repo = repoRoot;
  const revision = gitRevision(repo);
  if (!revision) throw new Error(`${repo} is not a git checkout (or git is missing): a release names its commit`);
  const epoch = env.SOURCE_DATE_EPOCH || git(repo, 'log', '-1', '--format=%ct', 'HEAD');
  if (!epoch || !/^\d+$/.test(epoch)) throw new Error(`SOURCE_DATE_EPOCH "${epoch}" is not a number of seconds`);
  const created = new Date(Number(epoch) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { repository?: string | { url?: string } };
  const declared = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  const origin = declared ?? git(repo, 'remote', 'get-url', 'origin');
  return { version, revision, created, source: origin ? publicUrl(origin) : '' };
}

if (import.meta.main) {
  try {
    const metadata = releaseMetadata();
    for (const [key, value] of Object.entries(metadata)) process.stdout.write(`${key}=${value}\n`);
  } catch (error) {
    console.error(`metadata.ts: ${(error as Error).message}`);
    process.exit(1);
  }
}
