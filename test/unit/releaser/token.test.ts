import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { inClusterConfig } from '../../../src/kube/config.ts';
import { fileToken } from '../../../src/kube/token.ts';

describe('fileToken', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leaderhook-token-'));

  it('says once what is wrong with an empty token file', () => {
    const path = join(dir, 'empty');
    writeFileSync(path, '\n');
    assert.throws(
      () => fileToken(path),
      (e: Error) => e.message === `reading service-account token ${path}: file is empty`,
    );
  });

  it('says once what is wrong with a missing token file, keeping the cause', () => {
    const path = join(dir, 'missing');
    assert.throws(
      () => fileToken(path),
      (e: Error) => e.message === `reading service-account token ${path}: ENOENT` && (e.cause as NodeJS.ErrnoException).code === 'ENOENT',
    );
  });

  it('is not wrapped again by the in-cluster configuration', () => {
    const sa = mkdtempSync(join(tmpdir(), 'leaderhook-sa-'));
    writeFileSync(join(sa, 'ca.crt'), 'not a real CA');
    writeFileSync(join(sa, 'token'), '');
    assert.throws(
      () => inClusterConfig({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, sa),
      (e: Error) => e.message === `reading service-account token ${join(sa, 'token')}: file is empty`,
    );
  });

  it('keeps the last good token when a re-read fails', () => {
    const path = join(dir, 'rotating');
    writeFileSync(path, 'one\n');
    const token = fileToken(path, 0);
    writeFileSync(path, '');
    assert.equal(token.get(), 'one');
    writeFileSync(path, 'two\n');
    assert.equal(token.get(), 'two');
  });
});
