import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_DEV_HOSTS, ensureDevCertificates, WEBHOOK_SERVICE_NAMES } from '../../../src/webhook/devcerts.ts';
import { memoryLogger } from './support.ts';

describe('development certificates', () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'leaderhook-devcerts-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('creates a CA and a serving certificate it signed, for local and in-cluster names', async () => {
    const dir = join(root, 'fresh', 'certs');
    const files = await ensureDevCertificates(dir, memoryLogger().logger);
    assert.equal(files.created, true);
    const ca = new X509Certificate(await readFile(files.caFile));
    const cert = new X509Certificate(await readFile(files.certFile));
    assert.equal(ca.ca, true);
    assert.equal(cert.ca, false);
    assert.ok(cert.verify(ca.publicKey), 'signed by the CA');
    assert.ok(cert.checkPrivateKey(createPrivateKey(await readFile(files.keyFile))));
    for (const host of ['localhost', 'leaderhook-webhook.leaderhook-system.svc', 'leaderhook-webhook.leaderhook-system.svc.cluster.local']) {
      assert.equal(cert.checkHost(host), host, host);
    }
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.ok(WEBHOOK_SERVICE_NAMES.every((name) => DEFAULT_DEV_HOSTS.includes(name)));
    assert.equal((await stat(files.keyFile)).mode & 0o777, 0o600, 'the key is private');
    assert.equal((await stat(files.certFile)).mode & 0o777, 0o644);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
  });

  it('reuses fitting files and replaces ones that do not fit', async () => {
    const dir = join(root, 'reuse');
    const { logger } = memoryLogger();
    const first = await ensureDevCertificates(dir, logger);
    const firstCert = await readFile(first.certFile, 'utf8');

    const again = await ensureDevCertificates(dir, logger);
    assert.equal(again.created, false);
    assert.equal(await readFile(again.certFile, 'utf8'), firstCert);

    const wider = await ensureDevCertificates(dir, logger, [...DEFAULT_DEV_HOSTS, '10.96.0.1']);
    assert.equal(wider.created, true, 'a host the certificate does not cover makes a new set');
    assert.equal(new X509Certificate(await readFile(wider.certFile)).checkIP('10.96.0.1'), '10.96.0.1');

    await writeFile(join(dir, 'ca.crt'), 'not a certificate\n');
    assert.equal((await ensureDevCertificates(dir, logger, [...DEFAULT_DEV_HOSTS, '10.96.0.1'])).created, true);

    await rm(join(dir, 'tls.key'));
    const recreated = await ensureDevCertificates(dir, logger);
    assert.equal(recreated.created, true);
  });

  it('fails with the directory in the message when it cannot write', async () => {
    const blocker = join(root, 'a-file');
    await writeFile(blocker, '');
    await assert.rejects(ensureDevCertificates(join(blocker, 'certs'), memoryLogger().logger), {
      message: new RegExp(`^creating development certificates in ${join(blocker, 'certs')}: `),
    });
  });
});
