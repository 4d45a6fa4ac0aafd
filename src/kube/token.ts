import { readFileSync } from 'node:fs';

/** Where the bearer token comes from; `invalidate` forces a re-read (after a 401). */
export interface TokenSource {
  get(): string | undefined;
  invalidate(): void;
}

export function staticToken(token: string): TokenSource {
  return { get: () => token, invalidate: () => {} };
}

/**
 * A token file re-read at most every `maxAgeMs`, and at once after
 * `invalidate()`. The kubelet rotates projected service-account tokens in
 * place (well before they expire), so a token read once at start stops
 * working after an hour or so. A failed re-read keeps the last good token:
 * the file is swapped through a symlink and may be briefly missing.
 */
export function fileToken(path: string, maxAgeMs = 60_000): TokenSource {
  // Says what went wrong once, with the path once: "reading service-account token <path>: ENOENT".
  const read = (): string => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`reading service-account token ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
    }
    const token = text.trim();
    if (!token) throw new Error(`reading service-account token ${path}: file is empty`);
    return token;
  };
  let token = read();
  let readAt = Date.now();
  return {
    get() {
      if (Date.now() - readAt >= maxAgeMs) {
        readAt = Date.now();
        try {
          token = read();
        } catch {
          // keep the previous token; the next 401 or interval tries again
        }
      }
      return token;
    },
    invalidate() {
      readAt = 0;
    },
  };
}
