/**
 * The commit `leaderhook version` names: written by a build into
 * build-info.json beside the modules, read back; without the file, git's.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { BUILD_INFO_FILE, buildRevision, formatBuildInfo, gitRevision, shortRevision } from '../../src/build-info.ts';

const commit = '0123456789abcdef0123456789abcdef01234567';
const dir = mkdtempSync(path.join(tmpdir(), 'leaderhook-build-info-'));
after(() => rmSync(dir, { recursive: true, force: true }));
/** buildRevision as the module at `dir`/build-info.js would call it. */
const revisionAt = (d: string) => buildRevision(pathToFileURL(path.join(d, 'build-info.js')).href);

describe('build info', () => {
  it('reads back the commit a build wrote, and null for what is not a commit id', () => {
    for (const [written, read] of [
      [commit, commit],
      [`${commit}-dirty`, `${commit}-dirty`],
      ['unknown', undefined],
      ['', undefined],
      [undefined, undefined],
      ['abc1234', undefined],
    ] as const) {
      writeFileSync(path.join(dir, BUILD_INFO_FILE), formatBuildInfo(written));
      assert.equal(revisionAt(dir), read, `written ${JSON.stringify(written)}`);
    }
    writeFileSync(path.join(dir, BUILD_INFO_FILE), '{not json');
    assert.equal(revisionAt(dir), undefined, 'a broken file is unknown, not a crash');
  });

  it("without the file, asks git: this checkout's HEAD, -dirty with changes; nothing outside a work tree", () => {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
    const here = gitRevision(import.meta.dirname);
    assert.ok(here === head || here === `${head}-dirty`, String(here));
    assert.equal(revisionAt(import.meta.dirname), here);
    const outside = mkdtempSync(path.join(tmpdir(), 'leaderhook-no-git-'));
    try {
      assert.equal(revisionAt(outside), undefined);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('shortens a commit to 7 digits and keeps -dirty', () => {
    assert.equal(shortRevision(commit), '0123456');
    assert.equal(shortRevision(`${commit}-dirty`), '0123456-dirty');
  });
});
