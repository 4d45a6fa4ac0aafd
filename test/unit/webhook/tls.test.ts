/**
 * Certificate hot reload against a running server: the kubelet's `..data`
 * symlink swap, files overwritten in place, a bad pair, the poll alone.
 * Every check opens a new TLS connection and reads the certificate the
 * server presents on it.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generate } from 'selfsigned';
import { createCertificateAuthority, issueServingCertificate, type PemPair } from '../../../src/webhook/devcerts.ts';
import { createWebhookMetrics } from '../../../src/webhook/metrics.ts';
import { startWebhookServer } from '../../../src/webhook/server.ts';
import { createCertificateSource, loadCertificatePair, parseCertificatePair } from '../../../src/webhook/tls.ts';
import { eventually, memoryLogger, send, settings } from './support.ts';

const HOSTS = ['localhost', '127.0.0.1'];

function serialOf(pem: string): string {
  return new X509Certificate(pem).serialNumber;
}

/** A Secret volume as the kubelet lays it out: files are symlinks through `..data`. */
class SecretVolume {
  readonly dir: string;
  #generation = 0;
  #current = '';
  constructor(dir: string) {
    this.dir = dir;
  }
  get certFile(): string {
    return join(this.dir, 'tls.crt');
  }
  get keyFile(): string {
    return join(this.dir, 'tls.key');
  }
  /** Writes a new timestamped directory and renames `..data` onto it, as AtomicWriter does. */
  async publish(files: { 'tls.crt': string; 'tls.key': string; 'ca.crt': string }): Promise<void> {
    this.#generation += 1;
    const next = `..2026_11_29_00_00_0${this.#generation}.${process.pid}`;
    await mkdir(join(this.dir, next));
    for (const [name, content] of Object.entries(files)) await writeFile(join(this.dir, next, name), content);
    await symlink(next, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    if (this.#current === '') {
      for (const name of Object.keys(files)) await symlink(join('..data', name), join(this.dir, name));
    } else {
      await rm(join(this.dir, this.#current), { recursive: true });
    }
    this.#current = next;
  }
}

describe('certificate reload', () => {
  let ca: PemPair;
  let first: PemPair;
  let second: PemPair;
  let third: PemPair;
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'leaderhook-tls-'));
    ca = await createCertificateAuthority('leaderhook test CA');
    [first, second, third] = await Promise.all([issueServingCertificate(ca, HOSTS), issueServingCertificate(ca, HOSTS), issueServingCertificate(ca, HOSTS)]);
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function startOn(volume: { certFile: string; keyFile: string }, certPollIntervalMs = 0) {
    const { logger, lines } = memoryLogger();
    const webhook = await startWebhookServer({
      host: '127.0.0.1',
      port: 0,
      certFile: volume.certFile,
      keyFile: volume.keyFile,
      dev: false,
      certsDir: root,
      injection: settings,
      bodyLimitBytes: 65536,
      logger,
      certPollIntervalMs,
    });
    const served = async () => (await send(`${webhook.url}/healthz`, ca.cert)).serialNumber;
    const metric = async (name: string) => {
      const text = (await send(`${webhook.url}/metrics`, ca.cert)).body;
      const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
      return match ? Number(match[1]) : Number.NaN;
    };
    return { webhook, lines, served, metric };
  }

  it('serves the new pair after the kubelet swaps ..data, with the poll off', async () => {
    const volume = new SecretVolume(await mkdtemp(join(root, 'secret-')));
    await volume.publish({ 'tls.crt': first.cert, 'tls.key': first.key, 'ca.crt': ca.cert });
    const { webhook, lines, served, metric } = await startOn(volume);
    try {
      assert.equal(await served(), serialOf(first.cert));
      await volume.publish({ 'tls.crt': second.cert, 'tls.key': second.key, 'ca.crt': ca.cert });
      assert.equal(await eventually(served, (s) => s === serialOf(second.cert)), serialOf(second.cert));
      assert.equal(await metric('leaderhook_certificate_reloads_total'), 2);
      assert.equal(await metric('leaderhook_certificate_reload_errors_total'), 0);
      const line = lines.find((l) => l.msg === 'serving certificate reloaded');
      assert.equal(line?.serialNumber, serialOf(second.cert));
      assert.equal(line?.previousSerialNumber, serialOf(first.cert));
      assert.equal(line?.trigger, 'watch');
      assert.equal(line?.notAfter, new Date(new X509Certificate(second.cert).validTo).toISOString());
    } finally {
      await webhook.close();
    }
  });

  it('keeps the old pair serving when the new one is bad, counts one error, then takes a good one', async () => {
    const volume = new SecretVolume(await mkdtemp(join(root, 'secret-')));
    await volume.publish({ 'tls.crt': first.cert, 'tls.key': first.key, 'ca.crt': ca.cert });
    const { webhook, lines, served, metric } = await startOn(volume);
    try {
      // A certificate with someone else's key.
      await volume.publish({ 'tls.crt': second.cert, 'tls.key': third.key, 'ca.crt': ca.cert });
      assert.equal(
        await eventually(
          () => metric('leaderhook_certificate_reload_errors_total'),
          (n) => n === 1,
        ),
        1,
      );
      assert.equal(await served(), serialOf(first.cert), 'the old pair still serves');
      // The same bad bytes seen again (a poll tick) are not counted again.
      assert.equal(await webhook.certificates.reload('poll'), 'failed');
      assert.equal(await metric('leaderhook_certificate_reload_errors_total'), 1);
      const refused = lines.find((l) => l.msg === 'new serving certificate refused, the previous one keeps serving');
      assert.equal(refused?.level, 'error');
      assert.match(String((refused?.err as { message?: unknown } | undefined)?.message), /does not match private key/, 'the Error itself, message and all');

      await volume.publish({ 'tls.crt': third.cert, 'tls.key': third.key, 'ca.crt': ca.cert });
      assert.equal(await eventually(served, (s) => s === serialOf(third.cert)), serialOf(third.cert));
      assert.equal(await metric('leaderhook_certificate_reloads_total'), 2);
    } finally {
      await webhook.close();
    }
  });

  it('serves the new pair after the files are overwritten in place', async () => {
    const dir = await mkdtemp(join(root, 'plain-'));
    const files = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    await writeFile(files.certFile, first.cert);
    await writeFile(files.keyFile, first.key);
    const { webhook, served } = await startOn(files);
    try {
      await writeFile(files.certFile, second.cert);
      await writeFile(files.keyFile, second.key);
      assert.equal(await eventually(served, (s) => s === serialOf(second.cert)), serialOf(second.cert));
    } finally {
      await webhook.close();
    }
  });

  it('reloads on the poll alone when no watch is running', async () => {
    const dir = await mkdtemp(join(root, 'poll-'));
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    await writeFile(certFile, first.cert);
    await writeFile(keyFile, first.key);
    const { logger, lines } = memoryLogger();
    const metrics = createWebhookMetrics();
    const source = await createCertificateSource({ certFile, keyFile, logger, metrics, pollIntervalMs: 100, watch: false });
    const server = createServer({ cert: source.current().cert, key: source.current().key }, (_req, res) => res.end('ok'));
    source.attach(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      await writeFile(certFile, second.cert);
      await writeFile(keyFile, second.key);
      const serial = await eventually(
        async () => (await send(url, ca.cert)).serialNumber,
        (s) => s === serialOf(second.cert),
      );
      assert.equal(serial, serialOf(second.cert));
      assert.equal(lines.find((l) => l.msg === 'serving certificate reloaded')?.trigger, 'poll');
    } finally {
      source.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses to start without a loadable pair, naming the file', async () => {
    const dir = await mkdtemp(join(root, 'missing-'));
    await assert.rejects(loadCertificatePair(join(dir, 'tls.crt'), join(dir, 'tls.key')), {
      message: `reading serving certificate ${join(dir, 'tls.crt')}: ENOENT`,
    });
    await writeFile(join(dir, 'tls.crt'), first.cert);
    await assert.rejects(
      (async () => {
        const { logger } = memoryLogger();
        await startWebhookServer({
          host: '127.0.0.1',
          port: 0,
          certFile: join(dir, 'tls.crt'),
          keyFile: join(dir, 'tls.key'),
          dev: false,
          certsDir: dir,
          injection: settings,
          bodyLimitBytes: 1024,
          logger,
        });
      })(),
      { message: `reading private key ${join(dir, 'tls.key')}: ENOENT` },
    );
  });

  it('names what is wrong with a pair', async () => {
    const cert = Buffer.from(first.cert);
    const key = Buffer.from(first.key);
    assert.equal(parseCertificatePair(cert, key, '/c', '/k').serialNumber, serialOf(first.cert));
    assert.throws(() => parseCertificatePair(Buffer.from('not a certificate'), key, '/c', '/k'), /^Error: parsing serving certificate \/c: /);
    assert.throws(() => parseCertificatePair(cert, Buffer.from('garbage'), '/c', '/k'), /^Error: parsing private key \/k: /);
    assert.throws(() => parseCertificatePair(cert, Buffer.from(second.key), '/c', '/k'), /does not match private key \/k/);
    const expired = await issueServingCertificate(ca, HOSTS, 0);
    assert.throws(
      () => parseCertificatePair(Buffer.from(expired.cert), Buffer.from(expired.key), '/c', '/k'),
      /serving certificate \/c \(serial [0-9A-F]+\) expired at /,
    );
    // A file with a chain: the leaf first, the CA after it, loads as the leaf.
    const chain = parseCertificatePair(Buffer.from(`${first.cert}${ca.cert}`), key, '/c', '/k');
    assert.equal(chain.serialNumber, serialOf(first.cert));
  });

  it('loads a certificate with an empty subject, as cert-manager issues them, naming its subjectAltName', async () => {
    const pems = await generate([], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      ca,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'leaderhook-webhook.leaderhook-system.svc' }] }],
    });
    assert.equal(new X509Certificate(pems.cert).subject, undefined, 'Node reports the empty subject as undefined');
    const pair = parseCertificatePair(Buffer.from(pems.cert), Buffer.from(pems.private), '/c', '/k');
    assert.equal(pair.subject, '(no subject; DNS:leaderhook-webhook.leaderhook-system.svc)');
  });
});
