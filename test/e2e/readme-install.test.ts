/**
 * The README's install, Helm and uninstall command blocks, run as written —
 * extracted from README.md itself (each follows a comment
 * `<!-- README NAME block, run as written by test/e2e/readme-install.test.ts -->`),
 * so a README change that breaks an install fails here.
 *
 * Set up as a user's cluster would be: cert-manager running (the local
 * cluster's, test/cluster/up.sh), an operator in
 * namespace my-operator (test/operators' lfl-operator, its scaffold RBAC),
 * and the image under the names the README uses (`leaderhook:0.1.0` of
 * deploy/, `registry.example.com/leaderhook:0.1.0` of the Helm example):
 * the test image tagged so in the node's containerd, where
 * `imagePullPolicy: IfNotPresent` finds it. `kubectl`, `helm` and
 * `leaderhook` (a checkout's `node src/cli.ts`) are on the PATH.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/readme-install.test.ts
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { applyOperatorRbac, operatorManifest } from '../support/failover.ts';
import { admissionRegistration, apiStatus, apps, broughtOwnCluster, core, kubeconfigPath, rbac, waitFor } from '../support/kube.ts';
import { deleteNamespaceAndWait, leaderhookImage, requireCertManager } from '../support/leaderhook.ts';
import { goTool, repo } from '../support/tools.ts';

const OPERATOR_NAMESPACE = 'my-operator';
/** The names the README's blocks use for the image (deploy/kustomization.yaml and the Helm example). */
const README_IMAGES = ['docker.io/library/leaderhook:0.1.0', 'registry.example.com/leaderhook:0.1.0'];

/** The README's marked command blocks by name. */
export function readmeBlocks(markdown: string): Map<string, string> {
  const blocks = new Map<string, string>();
  const marked = /<!-- README (\S+) block, run as written by test\/e2e\/readme-install\.test\.ts -->\n```sh\n([\s\S]*?)\n```/g;
  for (const [, name, body] of markdown.matchAll(marked)) blocks.set(name!, body!);
  return blocks;
}

const blocks = readmeBlocks(readFileSync(join(repo, 'README.md'), 'utf8'));

function block(name: string): string {
  const found = blocks.get(name);
  assert.ok(found, `README.md has a marked ${name} block`);
  return found;
}

let binDir = '';

/** Runs `script` with bash as a user's shell would (stopping at the first failing command); returns its output. */
function runAsUser(name: string, script: string, env: Record<string, string> = {}): string {
  const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 600_000,
    env: { ...process.env, ...env, KUBECONFIG: kubeconfigPath, PATH: `${binDir}:${process.env.PATH}` },
  });
  const output = `${run.stdout}${run.stderr}`;
  assert.equal(run.status, 0, `the README's ${name} block failed (exit ${run.status ?? run.signal}):\n${output}`);
  return output;
}

function tagImage(target: string): void {
  const ctr = ['-n', 'k8s.io', '--address', process.env.CONTAINERD_ADDRESS ?? ''];
  execFileSync('ctr', [...ctr, 'images', 'tag', '--force', leaderhookImage, target], { stdio: 'pipe' });
}

describe("the README's install blocks, run as written", { skip: broughtOwnCluster ? 'tags images in the local cluster' : false }, () => {
  before(async () => {
    binDir = mkdtempSync(join(tmpdir(), 'leaderhook-readme-bin-'));
    writeFileSync(join(binDir, 'leaderhook'), `#!/bin/sh\nexec "${process.execPath}" "${join(repo, 'src/cli.ts')}" "$@"\n`);
    chmodSync(join(binDir, 'leaderhook'), 0o755);
    symlinkSync(goTool('helm'), join(binDir, 'helm'));
    for (const image of README_IMAGES) tagImage(image);

    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch(() => {});
    await deleteNamespaceAndWait('leaderhook-system');
    await deleteNamespaceAndWait(OPERATOR_NAMESPACE);
    requireCertManager();

    // A user's operator, running before leaderhook is installed.
    await core.createNamespace({ body: { metadata: { name: OPERATOR_NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } });
    await waitFor('the default ServiceAccount', () => core.readNamespacedServiceAccount({ name: 'default', namespace: OPERATOR_NAMESPACE }), 30_000);
    await applyOperatorRbac(OPERATOR_NAMESPACE);
    await apps.createNamespacedDeployment({ namespace: OPERATOR_NAMESPACE, body: operatorManifest('lfl-operator', {}) });
    await waitFor(
      'the operator running',
      async () => (await core.listNamespacedPod({ namespace: OPERATOR_NAMESPACE })).items.filter((p) => p.status?.phase === 'Running').length === 2,
      120_000,
    );
  });
  after(async () => {
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch(() => {});
    await deleteNamespaceAndWait(OPERATOR_NAMESPACE);
    await deleteNamespaceAndWait('leaderhook-system');
    if (binDir) rmSync(binDir, { recursive: true, force: true });
  });

  test('install: deploy/ through cert-manager, the hook bound to the real ServiceAccount, pods injected, leaderhook check all ✓', async (t) => {
    runAsUser('install', block('install'));
    // As the README says: a pod of the rollout may still be shutting down; the check is run again then.
    const output = await waitFor(
      'leaderhook check to pass',
      async () => {
        try {
          return runAsUser('verify', block('verify'), { ns: OPERATOR_NAMESPACE });
        } catch {
          return undefined;
        }
      },
      60_000,
      3_000,
    );
    t.diagnostic(output.split('\n').slice(-12).join('\n'));
    assert.match(output, /all \d+ checks passed/);
    const pods = (await core.listNamespacedPod({ namespace: OPERATOR_NAMESPACE })).items.filter((p) => !p.metadata?.deletionTimestamp);
    assert.ok(pods.length >= 2, 'the operator runs');
    for (const pod of pods) {
      assert.ok(pod.metadata?.annotations?.['leaderhook.io/injected'], `${pod.metadata?.name} was injected after the rollout restart`);
      assert.equal(pod.spec?.initContainers?.at(-1)?.image, 'leaderhook:0.1.0', 'the hook runs the image deploy/ names');
    }
  });

  test('uninstall: the registration, the webhook and the hook RBAC gone, the namespace no longer opted in', async () => {
    runAsUser('uninstall', block('uninstall'), { ns: OPERATOR_NAMESPACE });
    await assert.rejects(admissionRegistration.readMutatingWebhookConfiguration({ name: 'leaderhook' }), (error) => apiStatus(error) === 404);
    await waitFor(
      'namespace leaderhook-system to be gone',
      () =>
        core.readNamespace({ name: 'leaderhook-system' }).then(
          () => false,
          (error) => apiStatus(error) === 404,
        ),
      120_000,
    );
    const ns = await core.readNamespace({ name: OPERATOR_NAMESPACE });
    assert.equal(ns.metadata?.labels?.['leaderhook.io/injection'], undefined);
    const bindings = (await rbac.listNamespacedRoleBinding({ namespace: OPERATOR_NAMESPACE })).items.map((b) => b.metadata?.name ?? '');
    assert.deepEqual(
      bindings.filter((name) => name.startsWith('leaderhook-release')),
      [],
      "the hook's RoleBindings are gone",
    );
    await assert.rejects(rbac.readNamespacedRole({ name: 'leaderhook-release', namespace: OPERATOR_NAMESPACE }), (error) => apiStatus(error) === 404);
    assert.ok((await core.listNamespacedPod({ namespace: OPERATOR_NAMESPACE })).items.length > 0, 'the operator keeps running');
  });

  test('Helm: install, upgrade and uninstall as the README shows them', async () => {
    await deleteNamespaceAndWait('leaderhook-system');
    runAsUser('helm', block('helm'));
    await assert.rejects(admissionRegistration.readMutatingWebhookConfiguration({ name: 'leaderhook' }), (error) => apiStatus(error) === 404);
  });
});
