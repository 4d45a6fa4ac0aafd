/**
 * The chart as a release ships it (`scripts/release.sh --only chart`, helm
 * package): named after package.json's version, with that version as its
 * version and appVersion, so that its default image tag (values.yaml's empty
 * image.tag means the appVersion) is the image of the same release.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parse } from 'yaml';
import { version } from '../../src/version.ts';
import { helm, repo } from '../support/tools.ts';

const out = mkdtempSync(path.join(tmpdir(), 'leaderhook-chart-package-'));
after(() => rmSync(out, { recursive: true, force: true }));

describe('the released chart', () => {
  it("is charts/leaderhook-VERSION.tgz, its version and appVersion package.json's, its image the release's", () => {
    execFileSync('bash', [path.join(repo, 'scripts/release.sh'), '--only', 'chart', '--out', path.join(out, 'release')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const chart = path.join(out, 'release/charts', `leaderhook-${version}.tgz`);
    const shown = parse(helm(['show', 'chart', chart])) as { version: string; appVersion: string };
    assert.deepEqual({ version: shown.version, appVersion: shown.appVersion }, { version, appVersion: version });
    const rendered = helm(['template', 'leaderhook', chart, '--namespace', 'leaderhook-system']);
    assert.match(rendered, new RegExp(`^\\s+image: "?leaderhook:${version.replaceAll('.', '\\.')}"?$`, 'm'), "the webhook runs the release's image");
    const sums = readFileSync(path.join(out, 'release/SHA256SUMS'), 'utf8');
    assert.match(sums, new RegExp(`^[0-9a-f]{64}  charts/leaderhook-${version.replaceAll('.', '\\.')}\\.tgz\\n$`));
  });
});
