/**
 * What the kube-apiserver logged about calling leaderhook's webhooks. Pure
 * but for reading the log file: no cluster client, so unit tests read it too.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** A log file read from where it ended when this was created: what was logged during a window. */
export class LogTail {
  readonly #file: string;
  readonly #start: number;

  constructor(file: string) {
    this.#file = file;
    this.#start = statSync(file).size;
  }

  /** The lines logged since this was created. */
  lines(): string[] {
    const length = statSync(this.#file).size - this.#start;
    if (length <= 0) return [];
    const buffer = Buffer.alloc(length);
    const fd = openSync(this.#file, 'r');
    try {
      readSync(fd, buffer, 0, length, this.#start);
    } finally {
      closeSync(fd);
    }
    return buffer.toString('utf8').split('\n').filter(Boolean);
  }
}

/**
 * The API server's complaints about calling one of leaderhook's webhooks
 * (klog lines of its admission dispatcher, "failed calling webhook" with or
 * without "failing open"), the TLS ones apart: a certificate the API
 * server's CA bundle does not verify, a handshake that failed.
 */
export function webhookCallErrors(lines: readonly string[]): { tls: string[]; other: string[] } {
  const calls = lines.filter((l) => /leaderhook/.test(l) && /failed calling webhook|failing open/i.test(l));
  const tls = calls.filter((l) => /x509|tls:|certificate|handshake/i.test(l));
  return { tls, other: calls.filter((l) => !tls.includes(l)) };
}
