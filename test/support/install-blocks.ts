/**
 * The install commands the documentation shows, as test/e2e/readme-install.test.ts
 * runs them: each shell block that follows a comment
 * `<!-- [README ]NAME block, run as written by test/e2e/readme-install.test.ts -->`
 * in README.md (mirror, install, verify) or docs/install.md (helm, uninstall).
 * No cluster is needed to read them, so test/unit/docs.test.ts checks they are all there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The files that hold marked blocks, relative to the repository. */
export const INSTALL_BLOCK_FILES = ['README.md', 'docs/install.md'] as const;

/** The marked command blocks of one Markdown text, by name. */
export function markedBlocks(markdown: string): Map<string, string> {
  const blocks = new Map<string, string>();
  const marked = /<!-- (?:README )?(\S+) block, run as written by test\/e2e\/readme-install\.test\.ts -->\n```sh\n([\s\S]*?)\n```/g;
  for (const [, name, body] of markdown.matchAll(marked)) {
    if (blocks.has(name!)) throw new Error(`two blocks named ${name}`);
    blocks.set(name!, body!);
  }
  return blocks;
}

/** Every marked block of INSTALL_BLOCK_FILES by name; a name in two places is an error. */
export function installBlocks(repo: string): Map<string, string> {
  const all = new Map<string, string>();
  for (const file of INSTALL_BLOCK_FILES) {
    for (const [name, body] of markedBlocks(readFileSync(join(repo, file), 'utf8'))) {
      if (all.has(name)) throw new Error(`${file}: a block named ${name} is marked elsewhere too`);
      all.set(name, body);
    }
  }
  return all;
}
