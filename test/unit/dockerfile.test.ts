/**
 * The Dockerfile against the Node the project is pinned to: users' image is
 * built on the official node image of exactly the version the `node`
 * devDependency gives development, the tests and the tests' image.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { releaseMetadata } from '../../scripts/release/metadata.ts';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const dockerfile = read('Dockerfile');
const arg = (name: string) => {
  const match = new RegExp(`^ARG ${name}=(\\S+)$`, 'm').exec(dockerfile);
  assert.ok(match, `the Dockerfile has a default for ARG ${name}`);
  return match[1];
};

describe('Dockerfile', () => {
  it('NODE_VERSION is the version of the pinned node devDependency', () => {
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string }> };
    const pkg = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };
    const pinned = lock.packages['node_modules/node']?.version;
    assert.equal(arg('NODE_VERSION'), pinned, 'ARG NODE_VERSION = package-lock.json node_modules/node version');
    assert.equal(pkg.devDependencies.node?.replace(/^[\^~]/, ''), pinned, 'package.json asks for the locked version');
  });

  it('skips no install script the image needs (npm ci --ignore-scripts)', () => {
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const scripted = Object.entries(lock.packages).flatMap(([name, p]) => (p.hasInstallScript ? [name] : []));
    assert.deepEqual(scripted, ['node_modules/node'], 'only the node devDependency, whose script downloads the Node the base already has');
  });

  it('builds both stages on the official node image by default, each overridable', () => {
    assert.equal(arg('BUILD_IMAGE'), `node:\${NODE_VERSION}-bookworm-slim`);
    assert.equal(arg('BASE_IMAGE'), `node:\${NODE_VERSION}-bookworm-slim`);
    assert.deepEqual(
      [...dockerfile.matchAll(/^FROM (?:--platform=\S+ )?(\S+)/gm)].map((m) => m[1]),
      [`\${BUILD_IMAGE}`, `\${BASE_IMAGE}`],
    );
  });

  it('builds its JavaScript on the building platform, so that another target needs no emulator', () => {
    assert.match(dockerfile, /^FROM --platform=\$\{BUILDPLATFORM\} \$\{BUILD_IMAGE\} AS build$/m);
    assert.doesNotMatch(dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')), /^RUN /m, 'the target stage runs nothing');
  });

  it("labels the image org.opencontainers.image.*: title and licenses are package.json's, the rest the build arguments the release's metadata names", () => {
    const pkg = JSON.parse(read('package.json')) as { name: string; license: string };
    const labels = Object.fromEntries([...dockerfile.matchAll(/(org\.opencontainers\.image\.\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    assert.deepEqual(labels, {
      'org.opencontainers.image.title': pkg.name,
      'org.opencontainers.image.licenses': pkg.license,
      'org.opencontainers.image.version': `\${VERSION}`,
      'org.opencontainers.image.revision': `\${REVISION}`,
      'org.opencontainers.image.created': `\${CREATED}`,
      'org.opencontainers.image.source': `\${SOURCE}`,
    });
    const metadataKeys = Object.keys(releaseMetadata({ SOURCE_DATE_EPOCH: '0' })).map((k) => k.toUpperCase());
    for (const key of metadataKeys) assert.match(dockerfile, new RegExp(`^ARG ${key}=""$`, 'm'), `ARG ${key}, empty unless given`);
  });

  it('runs as 65532:65532', () => {
    assert.deepEqual(
      [...dockerfile.matchAll(/^USER (\S+)$/gm)].map((m) => m[1]),
      ['65532:65532'],
    );
  });
});
