/**
 * verifyServingCertificate against certificates made the way development and
 * the tests make them (src/webhook/devcerts.ts), broken one way at a time.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { generate } from 'selfsigned';
import { verifyServingCertificate } from '../../../src/check/certificate.ts';
import { createCertificateAuthority, issueServingCertificate, type PemPair, WEBHOOK_SERVICE_NAMES } from '../../../src/webhook/devcerts.ts';

const dnsName = 'leaderhook-webhook.leaderhook-system.svc';
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate devcerts would not make: `commonName` and `extensions` as given, signed by `ca`. */
async function signed(ca: PemPair, commonName: string, extensions: SelfsignedExtensions): Promise<PemPair> {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    ca,
    notBeforeDate: new Date(Date.now() - 60_000),
    notAfterDate: new Date(Date.now() + 30 * DAY_MS),
    extensions,
  });
  return { cert: `${pems.cert.trimEnd()}\n`, key: pems.private };
}

type SelfsignedExtensions = NonNullable<NonNullable<Parameters<typeof generate>[1]>['extensions']>;

describe('verifyServingCertificate', () => {
  let ca: PemPair;
  let otherCa: PemPair;
  let serving: PemPair;
  let notAfter: Date;
  before(async () => {
    [ca, otherCa] = await Promise.all([createCertificateAuthority('leaderhook test CA'), createCertificateAuthority('some other CA')]);
    serving = await issueServingCertificate(ca, WEBHOOK_SERVICE_NAMES, 90);
    notAfter = new X509Certificate(serving.cert).validToDate;
  });

  it('accepts a certificate the caBundle signed, for the Service name, with its key, and counts the days left', () => {
    const now = new Date(notAfter.getTime() - 30.5 * DAY_MS);
    const verdict = verifyServingCertificate({ caBundle: ca.cert, chain: serving.cert, key: serving.key, dnsName, now });
    assert.deepEqual(verdict.problems, []);
    assert.equal(verdict.daysLeft, 30);
    assert.deepEqual(verdict.notAfter, notAfter);
  });

  it('accepts a bundle that holds the right CA among others (a rotation in progress)', () => {
    const verdict = verifyServingCertificate({ caBundle: otherCa.cert + ca.cert, chain: serving.cert, dnsName, now: new Date() });
    assert.deepEqual(verdict.problems, []);
  });

  it('refuses a certificate another CA signed, naming the issuer', () => {
    const verdict = verifyServingCertificate({ caBundle: otherCa.cert, chain: serving.cert, dnsName, now: new Date() });
    assert.equal(verdict.problems.length, 1);
    assert.match(verdict.problems[0]!, /the caBundle \("CN=some other CA"\) does not verify it: it was issued by "CN=leaderhook test CA"/);
  });

  it('refuses an expired certificate, and one not valid yet', () => {
    const expired = verifyServingCertificate({ caBundle: ca.cert, chain: serving.cert, dnsName, now: new Date(notAfter.getTime() + DAY_MS) });
    assert.deepEqual(expired.problems, [`the serving certificate expired on ${notAfter.toISOString()}`]);
    assert.equal(expired.daysLeft, -1);
    const early = verifyServingCertificate({ caBundle: ca.cert, chain: serving.cert, dnsName, now: new Date(Date.now() - DAY_MS) });
    assert.match(early.problems.join(), /the serving certificate is not valid before/);
  });

  it('refuses a certificate whose subjectAltNames miss the Service name, even with it as common name', async () => {
    const elsewhere = await issueServingCertificate(ca, ['leaderhook-webhook.other.svc']);
    const verdict = verifyServingCertificate({ caBundle: ca.cert, chain: elsewhere.cert, dnsName, now: new Date() });
    assert.deepEqual(verdict.problems, [`its subjectAltNames (DNS:leaderhook-webhook.other.svc) do not cover ${dnsName}`]);
    // Go, hence the API server, ignores the common name.
    const named = await signed(ca, dnsName, [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }]);
    assert.match(verifyServingCertificate({ caBundle: ca.cert, chain: named.cert, dnsName, now: new Date() }).problems.join(), /do not cover/);
  });

  it('refuses a key that is not the certificate’s', async () => {
    const other = await issueServingCertificate(ca, WEBHOOK_SERVICE_NAMES);
    const verdict = verifyServingCertificate({ caBundle: ca.cert, chain: serving.cert, key: other.key, dnsName, now: new Date() });
    assert.deepEqual(verdict.problems, ['tls.key is not the key of tls.crt']);
  });

  it('says what cannot be read', () => {
    assert.deepEqual(verifyServingCertificate({ caBundle: ca.cert, chain: '', dnsName, now: new Date() }).problems, ['tls.crt holds no certificate']);
    assert.deepEqual(verifyServingCertificate({ caBundle: 'garbage', chain: serving.cert, dnsName, now: new Date() }).problems, [
      'the caBundle holds no certificate',
    ]);
    const mangled = serving.cert.replace(/\n[A-Za-z0-9+/]{10}/, '\nAAAAAAAAAA');
    assert.match(
      verifyServingCertificate({ caBundle: ca.cert, chain: mangled, dnsName, now: new Date() }).problems.join(),
      /tls.crt: certificate 1 cannot be parsed/,
    );
  });

  it('follows an intermediate in tls.crt up to the caBundle', async () => {
    const intermediate = await signed(ca, 'leaderhook intermediate', [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true },
    ]);
    const leaf = await issueServingCertificate(intermediate, WEBHOOK_SERVICE_NAMES);
    const chained = verifyServingCertificate({ caBundle: ca.cert, chain: `${leaf.cert}${intermediate.cert}`, dnsName, now: new Date() });
    assert.deepEqual(chained.problems, []);
    const withoutIntermediate = verifyServingCertificate({ caBundle: ca.cert, chain: leaf.cert, dnsName, now: new Date() });
    assert.match(withoutIntermediate.problems.join(), /issued by "CN=leaderhook intermediate"/);
  });
});
