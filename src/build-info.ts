/**
 * The commit leaderhook was built from, for `leaderhook version`. A build
 * (the image's, the npm package's) writes it into build-info.json beside the
 * compiled modules, since neither carries a .git; run from a checkout, where
 * there is no such file, git answers. Loaded only by the version command: the
 * hook has no use for it, nor for child_process.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BUILD_INFO_FILE = 'build-info.json';

/** A full commit id, `-dirty` when the tree had changes git did not commit. */
const REVISION = /^[0-9a-f]{40}(-dirty)?$/;

export interface BuildInfo {
  /** null when the build did not know it (a `docker build` without --build-arg REVISION). */
  revision: string | null;
}

/** The file's text for `revision`; anything but a commit id (empty, "unknown") is written as null. */
export function formatBuildInfo(revision: string | undefined): string {
  const info: BuildInfo = { revision: revision && REVISION.test(revision) ? revision : null };
  return `${JSON.stringify(info, null, 2)}\n`;
}

/** HEAD of the work tree that holds `dir`, with `-dirty` for uncommitted changes; undefined outside one, or without git. */
export function gitRevision(dir: string): string | undefined {
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
  try {
    const head = git('rev-parse', 'HEAD').trim();
    if (!REVISION.test(head)) return undefined;
    return git('status', '--porcelain', '--untracked-files=normal').trim() === '' ? head : `${head}-dirty`;
  } catch {
    return undefined;
  }
}

/** The commit of this build: its build-info.json, else (a checkout) git, else undefined. */
export function buildRevision(moduleUrl: string = import.meta.url): string | undefined {
  let text: string;
  try {
    text = readFileSync(new URL(BUILD_INFO_FILE, moduleUrl), 'utf8');
  } catch {
    return gitRevision(fileURLToPath(new URL('.', moduleUrl)));
  }
  try {
    const { revision } = JSON.parse(text) as Partial<BuildInfo>;
    return typeof revision === 'string' && REVISION.test(revision) ? revision : undefined;
  } catch {
    return undefined;
  }
}

/** The commit as people read it: 7 digits, and -dirty if so. */
export function shortRevision(revision: string): string {
  return revision.slice(0, 7) + (revision.endsWith('-dirty') ? '-dirty' : '');
}
