/**
 * The CLI as a user installs it: the npm package that `npm run release`
 * makes (`scripts/release.sh --only cli`, the same path as a full release),
 * installed with `npm install -g --prefix` into an empty folder, and run from
 * that prefix's bin/ on the oldest Node.js it claims (MINIMUM_NODE, from
 * npm) and on the pinned Node.js 24. Whatever the package lacks — a module,
 * a dependency — fails a command here. No cluster: `check` reads the
 * in-memory one of the unit tests, served on loopback.
 *
 * LEADERHOOK_RELEASE_DIR=release/0.1.0 tests the tarball of a release made
 * before instead of packing one.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { shortRevision } from '../../src/build-info.ts';
import type { ReportDocument } from '../../src/check/report.ts';
import { MINIMUM_NODE } from '../../src/node-support.ts';
import { version } from '../../src/version.ts';
import { releaseMetadata } from '../../scripts/release/metadata.ts';
import { type CliOptions, runCli } from '../support/cli.ts';
import { injectCliCases, injectCliDir, injectCliFlags, STDERR, STDOUT } from '../support/inject-cli-goldens.ts';
import { goldenSettings } from '../support/injection-settings.ts';
import { type InstalledCli, installCli, packCli } from '../support/cli-package.ts';
import { npmNodeDir } from '../support/npm-node.ts';
import type { FakeApiServer } from '../support/fake-api-server.ts';
import { serveHealthyCluster, writeKubeconfig } from '../unit/check/fake-api-server.ts';

const work = mkdtempSync(path.join(tmpdir(), 'leaderhook-cli-package-'));
const given = process.env.LEADERHOOK_RELEASE_DIR;
let tarball: string;
let cli: InstalledCli;

/** Settings a developer's shell may hold, cleared: the goldens were written with the defaults. */
const cleared = Object.fromEntries(
  Object.keys(process.env)
    .filter((k) => k.startsWith('LEADERHOOK_') || k === 'KUBECONFIG')
    .map((k) => [k, '']),
);

let server: FakeApiServer | undefined;
let kubeconfig: string;

before(async () => {
  tarball = given ? path.join(given, `leaderhook-${version}.tgz`) : packCli(path.join(work, 'release'));
  assert.ok(existsSync(tarball), `no ${tarball}`);
  cli = installCli(tarball, path.join(work, 'prefix'));
  ({ server } = await serveHealthyCluster());
  kubeconfig = path.join(work, 'kubeconfig');
  await writeKubeconfig(kubeconfig, server);
});

after(() => {
  server?.close();
  rmSync(work, { recursive: true, force: true });
});

/** What `npm install` put into the prefix: the package's files and its dependencies'. */
function installedBytes(): number {
  return Number(execFileSync('du', ['-sb', cli.root], { encoding: 'utf8' }).split('\t')[0]);
}

describe('the CLI npm package', () => {
  it('holds dist/, package.json and LICENSE only: the tools, not the webhook or the hook, with bins leaderhook and kubectl-leaderhook', (t) => {
    const pkg = JSON.parse(readFileSync(path.join(cli.root, 'package.json'), 'utf8'));
    assert.deepEqual(pkg.bin, { leaderhook: 'dist/cli.js', 'kubectl-leaderhook': 'dist/cli.js' });
    assert.deepEqual(pkg.engines, { node: `>=${MINIMUM_NODE}` });
    assert.equal(pkg.version, version);
    assert.equal(pkg.private, undefined);
    assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['fast-json-patch', 'yaml'], 'only what check and inject import');
    const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).trim().split('\n');
    assert.deepEqual(
      files.filter((f) => !/^package\/(package\.json|LICENSE|dist\/.+\.js|dist\/build-info\.json)$/.test(f)),
      [],
    );
    assert.ok(files.includes('package/LICENSE'));
    for (const left of ['commands/webhook.js', 'commands/release.js', 'webhook/server.js', 'releaser/releaser.js']) {
      assert.ok(!files.includes(`package/dist/${left}`), `${left} is the image's`);
    }
    for (const bin of ['leaderhook', 'kubectl-leaderhook'] as const) assert.ok(existsSync(cli.bin(bin)), `${bin} in the prefix's bin/`);
    t.diagnostic(`tarball ${readFileSync(tarball).length} bytes, installed ${installedBytes()} bytes (du -sb, dependencies included)`);
  });

  for (const node of [
    { name: `Node.js ${MINIMUM_NODE} (the oldest supported)`, version: `v${MINIMUM_NODE}`, dir: () => npmNodeDir(MINIMUM_NODE) },
    { name: 'Node.js 24 (the pinned one)', version: process.version, dir: () => path.dirname(process.execPath) },
  ]) {
    describe(`installed, on ${node.name}`, () => {
      let env: NodeJS.ProcessEnv;
      before(() => {
        // The bins start with `#!/usr/bin/env node`: the first node on the PATH runs them, as on a user's machine.
        env = { ...cleared, PATH: `${node.dir()}${path.delimiter}${process.env.PATH}` };
      });
      const run = (bin: 'leaderhook' | 'kubectl-leaderhook', args: string[], options: CliOptions = {}) =>
        runCli(args, { command: cli.bin(bin), env, ...options });

      it('is that Node.js the bins run on', () => {
        const which = execFileSync('node', ['--version'], { env, encoding: 'utf8' }).trim();
        assert.equal(which, node.version);
      });

      it('leaderhook version and kubectl-leaderhook version name the version and the commit the release packed', async () => {
        const { revision } = releaseMetadata();
        for (const bin of ['leaderhook', 'kubectl-leaderhook'] as const) {
          const r = await run(bin, ['version']);
          assert.equal(r.status, 0, r.stderr);
          if (given) assert.match(r.stdout, new RegExp(`^leaderhook ${version.replaceAll('.', '\\.')} \\(commit [0-9a-f]{7}(-dirty)?\\)\\n$`));
          else assert.equal(r.stdout, `leaderhook ${version} (commit ${shortRevision(revision)})\n`);
        }
        const json = await run('leaderhook', ['version', '--output', 'json']);
        assert.equal(JSON.parse(json.stdout).version, version);
      });

      it('leaderhook --help lists the commands; the image-only ones say where they run', async () => {
        const help = await run('leaderhook', ['--help']);
        assert.equal(help.status, 0, help.stderr);
        assert.match(help.stdout, /^Usage: leaderhook <command>/);
        for (const command of ['webhook', 'release', 'inject', 'check', 'version']) assert.match(help.stdout, new RegExp(`^  ${command} `, 'm'));
        const webhook = await run('leaderhook', ['webhook', '--hook-image=x/leaderhook:1']);
        assert.equal(webhook.status, 1);
        assert.match(webhook.stderr, /^leaderhook webhook: this install has no webhook command: .* runs from the leaderhook image\n$/);
      });

      it('leaderhook inject -f prints every golden of test/testdata/inject-cli', async () => {
        assert.ok(injectCliCases.length >= 10);
        for (const name of injectCliCases) {
          // The goldens carry the version they were written with; the package, its own.
          const expected = (suffix: string) =>
            readFileSync(path.join(injectCliDir, `${name}${suffix}`), 'utf8').replaceAll(
              `leaderhook.io/injected: ${goldenSettings.version}`,
              `leaderhook.io/injected: ${version}`,
            );
          const r = await run('leaderhook', ['inject', '-f', `${name}.yaml`, ...injectCliFlags(name)], { cwd: injectCliDir });
          assert.equal(r.stdout, expected(STDOUT), `${name}: stdout`);
          assert.equal(r.stderr, expected(STDERR), `${name}: stderr`);
          assert.equal(r.status, name.startsWith('bad-') ? 1 : 0, `${name}: exit code`);
        }
      });

      it('kubectl-leaderhook check --output json reads a healthy install: every check passes', async () => {
        const r = await run('kubectl-leaderhook', ['check', '--kubeconfig', kubeconfig, '--output', 'json']);
        assert.equal(r.status, 0, r.stdout + r.stderr);
        const report = JSON.parse(r.stdout) as ReportDocument;
        assert.deepEqual(
          report.checks.filter((c) => !c.ok),
          [],
        );
        assert.equal(report.summary.total, 9);
      });
    });
  }
});
