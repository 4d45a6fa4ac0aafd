import { readFileSync } from 'node:fs';

/**
 * The version written into `leaderhook.io/injected`. Read from package.json
 * once at start: the same file in the repository, the image and dist/.
 */
export const version: string = (() => {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'leaderhook' && pkg.version) return pkg.version;
    } catch {
      // try the next location
    }
  }
  return '0.0.0-unknown';
})();
