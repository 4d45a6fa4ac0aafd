/**
 * The oldest Node.js the CLI runs on, for the npm package a user installs
 * with whatever Node.js they have (the image always brings Node.js 24). It is
 * the newest of what the tools' code needs: X509Certificate's validFromDate
 * and validToDate (`check`) arrived in 22.10, process.getBuiltinModule (the
 * API client) in 22.3. The npm package's engines field is written from it, and
 * the release test runs the installed CLI on exactly this version.
 */
export const MINIMUM_NODE = '22.10.0';

const parts = (v: string) => v.replace(/^v/, '').split('.').map(Number);

/** Why this CLI cannot run on Node.js `current`, or undefined when it can. */
export function unsupportedNode(current: string = process.versions.node): string | undefined {
  const have = parts(current);
  const need = parts(MINIMUM_NODE);
  for (let i = 0; i < need.length; i++) {
    const h = have[i] ?? 0;
    const n = need[i] ?? 0;
    if (h > n) return undefined;
    if (h < n) return `needs Node.js ${MINIMUM_NODE} or later; this is Node.js ${current.replace(/^v?/, 'v')} (${process.execPath})`;
  }
  return undefined;
}
