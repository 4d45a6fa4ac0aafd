/**
 * The serving certificate, loaded from files and reloaded when they change,
 * without a restart: cert-manager renews the Secret, the kubelet updates the
 * mounted volume, new TLS connections get the new pair.
 *
 * The kubelet updates a Secret volume by writing a new timestamped directory
 * and renaming the `..data` symlink onto it, so the files themselves never
 * change in place: the watch is on the directory. Watches can still be lost
 * (the watched directory replaced, inotify limits), so a poll re-reads the
 * files every few seconds too; the pair is swapped only when its bytes
 * changed. A new pair that does not load is refused and the old one keeps
 * serving (Linkerd's creds_watcher, controller-runtime's certwatcher).
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext, type Server } from 'node:tls';
import { errorMessage } from '../error-message.ts';
import type { Logger } from '../log.ts';
import { UserFacingError } from '../user-facing-error.ts';
import type { WebhookMetrics } from './metrics.ts';

export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
  /** Hex serial number of the leaf certificate, as OpenSSL prints it. */
  serialNumber: string;
  subject: string;
  notAfter: Date;
}

export interface CertificateSourceOptions {
  certFile: string;
  keyFile: string;
  logger: Logger;
  metrics: Pick<WebhookMetrics, 'certificateReloads' | 'certificateReloadErrors' | 'certificateExpiry'>;
  /** How often the files are re-read whatever the watch says; 0 turns the poll off. Default 5000. */
  pollIntervalMs?: number;
  /** Quiet time after a directory event before reading, so a swap in several steps is read once. Default 100. */
  debounceMs?: number;
  /** Watch the directories for changes; the poll alone when false. Default true. */
  watch?: boolean;
}

export type ReloadResult = 'unchanged' | 'reloaded' | 'failed';

export interface CertificateSource {
  /** The pair new connections get. */
  current(): CertificatePair;
  /** Swaps every later pair into this server (setSecureContext) and starts watching. */
  attach(server: Server): void;
  /** Re-reads the files now; what the watch and the poll call. */
  reload(trigger?: string): Promise<ReloadResult>;
  /** Stops watching and polling. */
  close(): void;
}

async function readPem(file: string, what: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UserFacingError(`reading ${what} ${file}: ${code ?? errorMessage(error)}`);
  }
}

/**
 * Checks that the bytes are a certificate and the private key that belongs to
 * it, still valid, and acceptable to OpenSSL as a server context. Errors name
 * the file and what is wrong with it.
 */
export function parseCertificatePair(cert: Buffer, key: Buffer, certFile: string, keyFile: string, now = new Date()): CertificatePair {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (error) {
    throw new UserFacingError(`parsing serving certificate ${certFile}: ${errorMessage(error)}`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    throw new UserFacingError(`parsing private key ${keyFile}: ${errorMessage(error)}`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new UserFacingError(`serving certificate ${certFile} (serial ${x509.serialNumber}) does not match private key ${keyFile}`);
  }
  const notAfter = new Date(x509.validTo);
  if (notAfter.getTime() <= now.getTime()) {
    throw new UserFacingError(`serving certificate ${certFile} (serial ${x509.serialNumber}) expired at ${notAfter.toISOString()}`);
  }
  try {
    // The chain in the file, if any, must load too; the API server sees all of it.
    createSecureContext({ cert, key });
  } catch (error) {
    throw new UserFacingError(`loading serving certificate ${certFile} with key ${keyFile}: ${errorMessage(error)}`);
  }
  return { cert, key, serialNumber: x509.serialNumber, subject: certificateName(x509), notAfter };
}

/**
 * A certificate's subject on one line, or its subjectAltName where the
 * subject is empty: cert-manager issues serving certificates with only
 * subjectAltNames (as Go, and so the API server, needs), and Node reports
 * an empty subject as undefined.
 */
export function certificateName(x509: X509Certificate): string {
  return x509.subject ? x509.subject.replaceAll('\n', ', ') : `(no subject; ${x509.subjectAltName ?? 'no subjectAltName'})`;
}

export async function loadCertificatePair(certFile: string, keyFile: string): Promise<CertificatePair> {
  // One after the other, so a pair missing both files always names the certificate first.
  const cert = await readPem(certFile, 'serving certificate');
  const key = await readPem(keyFile, 'private key');
  return parseCertificatePair(cert, key, certFile, keyFile);
}

function fingerprint(cert: Buffer, key: Buffer): string {
  return createHash('sha256').update(cert).update('\0').update(key).digest('hex');
}

/**
 * Loads the pair once (rejecting with the reason when it cannot) and returns
 * a source that keeps it current. Watching starts with `attach`.
 */
export async function createCertificateSource(options: CertificateSourceOptions): Promise<CertificateSource> {
  return new FileCertificateSource(options, await loadCertificatePair(options.certFile, options.keyFile));
}

/** The pair from files, kept current by a directory watch and a poll: cert-manager's file certificate source, in Node. */
class FileCertificateSource implements CertificateSource {
  readonly #certFile: string;
  readonly #keyFile: string;
  readonly #logger: Logger;
  readonly #metrics: CertificateSourceOptions['metrics'];
  readonly #pollIntervalMs: number;
  readonly #debounceMs: number;
  readonly #watchEnabled: boolean;
  #current: CertificatePair;
  #currentPrint: string;
  // The last refused input, so a bad pair is counted and logged once, not at every poll.
  #lastFailure: string | undefined;
  #server: Server | undefined;
  #closed = false;
  readonly #watchers = new Map<string, FSWatcher>();
  #pollTimer: NodeJS.Timeout | undefined;
  #debounceTimer: NodeJS.Timeout | undefined;
  #running: Promise<ReloadResult> = Promise.resolve('unchanged');

  constructor(options: CertificateSourceOptions, loaded: CertificatePair) {
    const { certFile, keyFile, logger, metrics } = options;
    this.#certFile = certFile;
    this.#keyFile = keyFile;
    this.#logger = logger;
    this.#metrics = metrics;
    this.#pollIntervalMs = options.pollIntervalMs ?? 5000;
    this.#debounceMs = options.debounceMs ?? 100;
    this.#watchEnabled = options.watch ?? true;
    this.#current = loaded;
    this.#currentPrint = fingerprint(loaded.cert, loaded.key);
    metrics.certificateReloads.inc();
    metrics.certificateExpiry.set(loaded.notAfter.getTime() / 1000);
    logger.info(
      { certFile, keyFile, serialNumber: loaded.serialNumber, subject: loaded.subject, notAfter: loaded.notAfter.toISOString(), trigger: 'start' },
      'serving certificate loaded',
    );
  }

  current(): CertificatePair {
    return this.#current;
  }

  attach(target: Server): void {
    this.#server = target;
    if (this.#closed) return;
    this.#watchDirectories();
    if (this.#pollIntervalMs > 0) {
      this.#pollTimer = setInterval(() => {
        this.#watchDirectories();
        void this.reload('poll');
      }, this.#pollIntervalMs);
      this.#pollTimer.unref();
    }
  }

  reload(trigger = 'manual'): Promise<ReloadResult> {
    // One read at a time: a watch event and a poll tick must not race to swap.
    this.#running = this.#running.then(() => this.#reloadOnce(trigger));
    return this.#running;
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#pollTimer);
    clearTimeout(this.#debounceTimer);
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }

  async #reloadOnce(trigger: string): Promise<ReloadResult> {
    const certFile = this.#certFile;
    const keyFile = this.#keyFile;
    let pair: CertificatePair;
    let print: string | undefined;
    try {
      const [cert, key] = await Promise.all([readPem(certFile, 'serving certificate'), readPem(keyFile, 'private key')]);
      print = fingerprint(cert, key);
      if (print === this.#currentPrint) {
        this.#lastFailure = undefined;
        return 'unchanged';
      }
      pair = parseCertificatePair(cert, key, certFile, keyFile);
    } catch (error) {
      const failure = print ?? errorMessage(error);
      if (failure !== this.#lastFailure) {
        this.#lastFailure = failure;
        this.#metrics.certificateReloadErrors.inc();
        this.#logger.error(
          { certFile, keyFile, trigger, err: error, servingSerialNumber: this.#current.serialNumber },
          'new serving certificate refused, the previous one keeps serving',
        );
      }
      return 'failed';
    }
    if (this.#closed) return 'unchanged';
    this.#server?.setSecureContext({ cert: pair.cert, key: pair.key });
    const previous = this.#current;
    this.#current = pair;
    this.#currentPrint = print;
    this.#lastFailure = undefined;
    this.#metrics.certificateReloads.inc();
    this.#metrics.certificateExpiry.set(pair.notAfter.getTime() / 1000);
    const { serialNumber, subject } = pair;
    const fields = { certFile, keyFile, trigger, serialNumber, subject, notAfter: pair.notAfter.toISOString(), previousSerialNumber: previous.serialNumber };
    this.#logger.info(fields, 'serving certificate reloaded');
    return 'reloaded';
  }

  #watchDirectories(): void {
    if (!this.#watchEnabled || this.#closed) return;
    for (const dir of new Set([dirname(this.#certFile), dirname(this.#keyFile)])) {
      if (this.#watchers.has(dir)) continue;
      try {
        const watcher = watch(dir, { persistent: false }, () => {
          clearTimeout(this.#debounceTimer);
          this.#debounceTimer = setTimeout(() => void this.reload('watch'), this.#debounceMs);
          this.#debounceTimer.unref();
        });
        watcher.on('error', (error) => {
          // The poll keeps reloading; the next tick tries to watch again.
          this.#logger.warn({ dir, err: error }, 'lost the watch on the certificate directory');
          watcher.close();
          this.#watchers.delete(dir);
        });
        this.#watchers.set(dir, watcher);
      } catch (error) {
        this.#logger.warn({ dir, err: error }, 'cannot watch the certificate directory, relying on the poll');
      }
    }
  }
}
