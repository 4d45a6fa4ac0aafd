/**
 * scripts/publish.sh refuses what is not a release folder, or one that does
 * not match its SHA256SUMS, before it needs skopeo, helm or a registry: each
 * case exits 1 with one line that names the file and what is wrong. The
 * publish itself runs against the cluster's registry
 * (test/e2e/registry-pull.test.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';

const script = path.join(import.meta.dirname, '../../scripts/publish.sh');
const scratch = mkdtempSync(path.join(tmpdir(), 'leaderhook-publish-test-'));
let folders = 0;

/** Runs the script; a missing HELM makes any case that got past the checks fail loudly instead of building helm. */
function publish(...args: string[]) {
  const run = spawnSync('bash', [script, ...args], { encoding: 'utf8', env: { ...process.env, HELM: '/nonexistent/helm' } });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface Layout {
  images?: string[];
  chart?: { file?: string; version?: string; appVersion?: string } | null;
  /** File → content listed in SHA256SUMS; default the real digests of the image and chart. */
  sums?: Record<string, string> | null;
}

/** A folder laid out as a release, with whatever `layout` changes. */
function releaseFolder(layout: Layout = {}): string {
  const dir = path.join(scratch, `release-${folders++}`);
  mkdirSync(path.join(dir, 'charts'), { recursive: true });
  const images = layout.images ?? ['leaderhook-0.2.0.oci.tar'];
  for (const image of images) writeFileSync(path.join(dir, image), `an image archive ${image}\n`);
  const listed: string[] = [...images];
  if (layout.chart !== null) {
    const { file = 'charts/leaderhook-0.2.0.tgz', version = '0.2.0', appVersion = '0.2.0' } = layout.chart ?? {};
    const chartDir = path.join(scratch, `chart-${folders}`, 'leaderhook');
    mkdirSync(chartDir, { recursive: true });
    writeFileSync(path.join(chartDir, 'Chart.yaml'), `apiVersion: v2\nname: leaderhook\nversion: ${version}\nappVersion: "${appVersion}"\n`);
    const tar = spawnSync('tar', ['-czf', path.join(dir, file), '-C', path.dirname(chartDir), 'leaderhook']);
    assert.equal(tar.status, 0, tar.stderr?.toString());
    listed.push(file);
  }
  if (layout.sums !== null) {
    const digest = (file: string) =>
      createHash('sha256')
        .update(readFileSync(path.join(dir, file)))
        .digest('hex');
    const lines = layout.sums
      ? Object.entries(layout.sums).map(([file, content]) => `${createHash('sha256').update(content).digest('hex')}  ${file}`)
      : listed.map((file) => `${digest(file)}  ${file}`);
    writeFileSync(path.join(dir, 'SHA256SUMS'), `${lines.join('\n')}\n`);
  }
  return dir;
}

function assertRefused(run: ReturnType<typeof publish>, message: RegExp): void {
  assert.equal(run.status, 1, `exit ${run.status}\n${run.stderr}`);
  assert.match(run.stderr, message);
  assert.doesNotMatch(run.stderr, /publishing /, 'nothing is published');
}

describe('scripts/publish.sh refuses bad input before publishing anything', () => {
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('--help prints the usage with the file names, exit 0', () => {
    const run = publish('--help');
    assert.equal(run.status, 0);
    assert.match(run.stdout, /^usage: scripts\/publish\.sh \[--ca-file CA\] \[--overwrite\] RELEASE_DIR REGISTRY/);
    assert.match(run.stdout, /leaderhook-VERSION\.oci\.tar +-> REGISTRY\/leaderhook:VERSION/);
    assert.match(run.stdout, /charts\/leaderhook-VERSION\.tgz -> oci:\/\/REGISTRY\/charts\/leaderhook/);
  });

  it('wrong arguments: the usage and what is missing', () => {
    assertRefused(publish(), /needs RELEASE_DIR and REGISTRY, got 0 argument/);
    assertRefused(publish('--bogus', 'a', 'b'), /unknown option --bogus/);
    assertRefused(publish(path.join(scratch, 'nowhere'), 'r:5000'), /nowhere: no such directory/);
    assertRefused(publish(releaseFolder(), 'https://r:5000'), /without a scheme/);
    assertRefused(publish(releaseFolder(), 'r:5000/UPPER'), /is not host\[:port\]\[\/path\]/);
    assertRefused(publish('--ca-file', path.join(scratch, 'no-ca.pem'), releaseFolder(), 'r:5000'), /--ca-file .*no-ca\.pem: no such file/);
  });

  it('not exactly one image archive, or one without a version', () => {
    assertRefused(publish(releaseFolder({ images: [] }), 'r:5000'), /holds 0 files named leaderhook-\*\.oci\.tar, needs exactly one/);
    assertRefused(publish(releaseFolder({ images: ['leaderhook-0.2.0.oci.tar', 'leaderhook-0.3.0.oci.tar'] }), 'r:5000'), /holds 2 files/);
    assertRefused(publish(releaseFolder({ images: ['leaderhook-latest.oci.tar'] }), 'r:5000'), /version "latest" is not MAJOR\.MINOR\.PATCH/);
  });

  it('the chart of that version missing, or saying another version', () => {
    assertRefused(publish(releaseFolder({ chart: null }), 'r:5000'), /charts\/leaderhook-0\.2\.0\.tgz: no such file/);
    assertRefused(publish(releaseFolder({ chart: { version: '0.1.9' } }), 'r:5000'), /Chart\.yaml says version "0\.1\.9", not 0\.2\.0/);
    assertRefused(publish(releaseFolder({ chart: { appVersion: '0.1.9' } }), 'r:5000'), /says appVersion "0\.1\.9": its default image tag would not be/);
  });

  it('SHA256SUMS missing, not listing a file, or not matching', () => {
    assertRefused(publish(releaseFolder({ sums: null }), 'r:5000'), /SHA256SUMS: no such file/);
    assertRefused(
      publish(releaseFolder({ sums: { 'leaderhook-0.2.0.oci.tar': 'an image archive leaderhook-0.2.0.oci.tar\n' } }), 'r:5000'),
      /SHA256SUMS does not list charts\/leaderhook-0\.2\.0\.tgz/,
    );
    const tampered = releaseFolder();
    writeFileSync(path.join(tampered, 'leaderhook-0.2.0.oci.tar'), 'something else\n');
    const run = publish(tampered, 'r:5000');
    assertRefused(run, /does not match its SHA256SUMS: nothing published/);
    assert.match(run.stderr, /leaderhook-0\.2\.0\.oci\.tar: FAILED/);
  });

  it('a sound folder gets past every check, to the tools', () => {
    const run = publish(releaseFolder(), 'r:5000');
    // skopeo comes with the cluster's packages (test/cluster/up.sh): a machine without it stops there.
    assertRefused(run, /HELM=\/nonexistent\/helm is not an executable|skopeo not found: apt-get install skopeo/);
  });
});
