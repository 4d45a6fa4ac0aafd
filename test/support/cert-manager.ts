import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** cert-manager's CRDs come from its Go module, pinned here. */
const CERT_MANAGER_MODULE = 'github.com/cert-manager/cert-manager@v1.19.1';

/**
 * The directory of cert-manager's CRDs as its release ships them (the
 * module's deploy/crds), downloaded into the Go module cache on first use.
 * test/run-all.sh calls this before the tests enter the cluster's network
 * namespace, which has no route to the module proxy.
 */
export function certManagerCrdDir(): string {
  const json = execFileSync('go', ['mod', 'download', '-json', CERT_MANAGER_MODULE], { encoding: 'utf8', cwd: '/' });
  return path.join((JSON.parse(json) as { Dir: string }).Dir, 'deploy/crds');
}
