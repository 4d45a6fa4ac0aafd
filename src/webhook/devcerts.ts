/**
 * Development certificates: a CA and a serving certificate signed by it, in
 * the layout cert-manager gives a Secret (`ca.crt`, `tls.crt`, `tls.key`), so
 * development and the cluster load certificates the same way. The CA's key
 * is never written: nothing else can be signed with it, and a new set is made
 * whenever a file is missing or the serving certificate no longer fits.
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import type { Logger } from '../log.ts';
import { UserFacingError } from '../user-facing-error.ts';

/** The in-cluster names of the webhook Service (deploy/), short and long. */
export const WEBHOOK_SERVICE_NAMES = [
  'leaderhook-webhook',
  'leaderhook-webhook.leaderhook-system',
  'leaderhook-webhook.leaderhook-system.svc',
  'leaderhook-webhook.leaderhook-system.svc.cluster.local',
] as const;

export const DEFAULT_DEV_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '::1', ...WEBHOOK_SERVICE_NAMES];

export interface PemPair {
  cert: string;
  key: string;
}

export interface DevCertificateFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** True when this call wrote new files. */
  created: boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;
// EC P-256 keys: generated in milliseconds, accepted by Go's TLS (the API server) and Node alike.
const KEY_OPTIONS = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const;

/** PEM files end with a newline, so files can be concatenated into a chain or bundle. */
function withNewline(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

/** A CA for development, valid ten years. */
export async function createCertificateAuthority(commonName = 'leaderhook development CA'): Promise<PemPair> {
  const notBeforeDate = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    ...KEY_OPTIONS,
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + 3650 * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: withNewline(pems.cert), key: withNewline(pems.private) };
}

/**
 * A serving certificate for `hosts` (DNS names and IP addresses) signed by
 * `ca`. Go, hence the API server, ignores the common name: the names are in
 * subjectAltName.
 */
export async function issueServingCertificate(ca: PemPair, hosts: readonly string[], validDays = 365): Promise<PemPair> {
  const [first] = hosts;
  if (first === undefined) throw new Error('a serving certificate needs at least one host name');
  const notBeforeDate = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: 'commonName', value: first }], {
    ...KEY_OPTIONS,
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + validDays * DAY_MS),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: hosts.map((host) => (isIP(host) ? { type: 7 as const, ip: host } : { type: 2 as const, value: host })),
      },
    ],
  });
  return { cert: withNewline(pems.cert), key: withNewline(pems.private) };
}

/** Why the files in `dir` cannot be reused, or undefined when they can. */
async function staleness(files: DevCertificateFiles, hosts: readonly string[]): Promise<string | undefined> {
  let caPem: Buffer;
  let certPem: Buffer;
  try {
    [caPem, certPem] = await Promise.all([readFile(files.caFile), readFile(files.certFile), readFile(files.keyFile)]);
  } catch (error) {
    return `${(error as NodeJS.ErrnoException).path ?? 'a file'} is missing or unreadable`;
  }
  try {
    const ca = new X509Certificate(caPem);
    const cert = new X509Certificate(certPem);
    if (!cert.verify(ca.publicKey)) return `${files.certFile} is not signed by ${files.caFile}`;
    if (new Date(cert.validTo).getTime() < Date.now() + DAY_MS) return `${files.certFile} expires within a day`;
    const missing = hosts.filter((host) => (isIP(host) ? !cert.checkIP(host) : !cert.checkHost(host, { wildcards: false })));
    if (missing.length > 0) return `${files.certFile} does not cover ${missing.join(', ')}`;
  } catch (error) {
    return `the certificates cannot be parsed: ${(error as Error).message}`;
  }
  return undefined;
}

async function writeAtomically(file: string, data: string, mode: number): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, data, { mode });
  await rename(temporary, file);
}

/**
 * Makes sure `dir` holds `ca.crt`, `tls.crt` and `tls.key` for `hosts`,
 * creating a new set when anything is missing, unreadable, expiring within a
 * day or not covering a host. The key is written with mode 0600.
 */
export async function ensureDevCertificates(dir: string, logger: Logger, hosts: readonly string[] = DEFAULT_DEV_HOSTS): Promise<DevCertificateFiles> {
  const files: DevCertificateFiles = {
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    created: false,
  };
  const reason = await staleness(files, hosts);
  if (reason === undefined) {
    logger.info({ dir }, 'using existing development certificates');
    return files;
  }
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const ca = await createCertificateAuthority();
    const serving = await issueServingCertificate(ca, hosts);
    await writeAtomically(files.caFile, ca.cert, 0o644);
    await writeAtomically(files.keyFile, serving.key, 0o600);
    await writeAtomically(files.certFile, serving.cert, 0o644);
  } catch (error) {
    throw new UserFacingError(`creating development certificates in ${dir}: ${(error as Error).message}`);
  }
  logger.info({ dir, hosts, reason, caFile: files.caFile }, 'created development certificates');
  return { ...files, created: true };
}
