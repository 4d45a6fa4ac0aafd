/**
 * The CLI as an npm package: `npm install -g leaderhook-X.tgz` gives
 * `leaderhook` and `kubectl-leaderhook` (a kubectl plugin is any executable
 * named kubectl-NAME on the PATH), running on the user's own Node.js. It holds
 * the tools only — check, inject, version — since the webhook and the hook
 * run from the image: the compiled modules those commands reach from
 * dist/cli.js, build-info.json, LICENSE, and a package.json whose
 * dependencies are the packages those modules import, at the versions
 * package-lock.json holds (the ones the tests ran with). The repository's
 * package.json stays private.
 *
 *   node scripts/release/cli-package.ts --out DIR [--revision COMMIT]
 *
 * Prints the tarball's path (DIR/leaderhook-VERSION.tgz). The commit defaults
 * to this checkout's (scripts/release/metadata.ts); scripts/release.sh passes
 * the one every artifact of the release names.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BUILD_INFO_FILE } from '../../src/build-info.ts';
import { MINIMUM_NODE } from '../../src/node-support.ts';
import { writeBuildInfo } from '../build-info.ts';
import { releaseMetadata, repoRoot } from './metadata.ts';

/** The commands whose modules the package leaves out: they run from the image (src/cli.ts says so when asked). */
export const IMAGE_ONLY_COMMANDS = ['webhook', 'release'] as const;
export const CLI_BINS = ['leaderhook', 'kubectl-leaderhook'] as const;

const SPECIFIERS = [
  /\bfrom\s*['"]([^'"]+)['"]/g, // import … from, export … from
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, // import('…')
  /^\s*import\s*['"]([^'"]+)['"]/gm, // import '…'
];

/** The package a bare specifier names: `yaml`, `@scope/name` (without a subpath). */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return (specifier.startsWith('@') ? parts.slice(0, 2) : parts.slice(0, 1)).join('/');
}

/**
 * Every module (relative to `dist`) that `entry` reaches through its imports,
 * static and dynamic, except those of `leaveOut`, and the packages they
 * import. A relative import of a file that is not there is an error: the
 * package would fail at run time.
 */
export function reachableModules(dist: string, entry: string, leaveOut: readonly string[]): { modules: string[]; packages: string[] } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (module: string, from: string) => {
    if (modules.has(module) || leaveOut.includes(module)) return;
    const file = join(dist, module);
    if (!existsSync(file)) throw new Error(`${from} imports ${module}, which the build did not make`);
    modules.add(module);
    const text = readFileSync(file, 'utf8');
    for (const pattern of SPECIFIERS) {
      for (const [, specifier] of text.matchAll(pattern)) {
        if (specifier!.startsWith('.')) visit(posix.normalize(posix.join(posix.dirname(module), specifier!)), module);
        else if (!isBuiltin(specifier!)) packages.add(packageOf(specifier!));
      }
    }
  };
  visit(entry, 'the package');
  return { modules: [...modules].sort(), packages: [...packages].sort() };
}

interface RepoPackage {
  name: string;
  version: string;
  description?: string;
  license?: string;
  dependencies?: Record<string, string>;
}

/** The CLI's package.json: only what `npm install` needs and a registry page shows. */
export function cliPackageJson(repo: RepoPackage, lockVersions: Record<string, string | undefined>, packages: readonly string[], source: string) {
  const dependencies: Record<string, string> = {};
  for (const name of packages) {
    if (!repo.dependencies?.[name]) throw new Error(`the CLI's modules import ${name}, which package.json does not list in dependencies`);
    const locked = lockVersions[name];
    if (!locked) throw new Error(`package-lock.json holds no version of ${name}: run npm install`);
    dependencies[name] = locked;
  }
  return {
    name: repo.name,
    version: repo.version,
    description: repo.description,
    license: repo.license,
    type: 'module',
    bin: Object.fromEntries(CLI_BINS.map((bin) => [bin, 'dist/cli.js'])),
    engines: { node: `>=${MINIMUM_NODE}` },
    dependencies,
    ...(source ? { repository: { type: 'git', url: source } } : {}),
  };
}

export interface PackedCli {
  /** The tarball's path. */
  file: string;
  /** What the tarball holds, relative to its package/ root. */
  files: string[];
  dependencies: Record<string, string>;
}

/** Compiles src/ into a scratch directory, stages the package there and packs it into `out`. */
export function packCli(out: string, revision: string): PackedCli {
  const work = mkdtempSync(join(tmpdir(), 'leaderhook-cli-package-'));
  try {
    const build = join(work, 'build');
    const stage = join(work, 'package');
    execFileSync(join(repoRoot, 'node_modules/.bin/tsc'), ['-p', join(repoRoot, 'tsconfig.build.json'), '--outDir', build], { stdio: ['ignore', 2, 2] });
    writeBuildInfo(build, revision);
    const { modules, packages } = reachableModules(
      build,
      'cli.js',
      IMAGE_ONLY_COMMANDS.map((c) => `commands/${c}.js`),
    );
    for (const module of [...modules, BUILD_INFO_FILE]) {
      mkdirSync(dirname(join(stage, 'dist', module)), { recursive: true });
      copyFileSync(join(build, module), join(stage, 'dist', module));
    }
    // Apache-2.0 asks for its text with every copy.
    copyFileSync(join(repoRoot, 'LICENSE'), join(stage, 'LICENSE'));
    const repo = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as RepoPackage;
    const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
    const lockVersions = Object.fromEntries(packages.map((p) => [p, lock.packages[`node_modules/${p}`]?.version]));
    const pkg = cliPackageJson(repo, lockVersions, packages, releaseMetadata().source);
    writeFileSync(join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
    mkdirSync(out, { recursive: true });
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', resolve(out)], { cwd: stage, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }),
    ) as { filename: string; files: { path: string }[] }[];
    const file = join(resolve(out), packed[0]!.filename);
    if (!statSync(file).isFile()) throw new Error(`npm pack wrote no ${file}`);
    return { file, files: packed[0]!.files.map((f) => f.path).sort(), dependencies: pkg.dependencies };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const usage = 'usage: node scripts/release/cli-package.ts --out DIR [--revision COMMIT]';
  let values: { out?: string; revision?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ options: { out: { type: 'string' }, revision: { type: 'string' }, help: { type: 'boolean' } }, strict: true }));
  } catch (error) {
    console.error(`cli-package.ts: ${(error as Error).message}\n${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  if (!values.out) {
    console.error(`cli-package.ts: --out is missing\n${usage}`);
    process.exit(2);
  }
  try {
    console.log(packCli(values.out, values.revision ?? releaseMetadata().revision).file);
  } catch (error) {
    console.error(`cli-package.ts: ${(error as Error).message}`);
    process.exit(1);
  }
}
