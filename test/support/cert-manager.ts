/**
 * cert-manager of the local cluster. test/cluster/up.sh builds it from its Go
 * module (test/cert-manager/build.sh), applies its CRDs and runs its
 * controller and cainjector as recorded processes of the cluster, as a
 * user's cluster runs cert-manager before leaderhook is installed; down.sh
 * stops them. No test starts or stops cert-manager: they only check it serves.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const buildScript = path.join(import.meta.dirname, '../cert-manager/build.sh');

/**
 * The directory of cert-manager's CRDs as its release ships them (the
 * module's deploy/crds, in the Go module cache once up.sh ran).
 */
export function certManagerCrdDir(): string {
  return execFileSync('bash', [buildScript, '--crds'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
