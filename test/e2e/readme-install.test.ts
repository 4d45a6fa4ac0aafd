/**
 * The documentation's install commands, run as written: the mirror, install
 * and verify blocks of README.md and the uninstall and Helm blocks of
 * docs/install.md, extracted from those files (each follows a comment
 * `<!-- [README ]NAME block, run as written by test/e2e/readme-install.test.ts -->`,
 * test/support/install-blocks.ts), so a change that breaks an install fails here.
 *
 * A user's path: the release folder `npm run release` wrote (test/run-all.sh
 * builds it before the cluster tests; LEADERHOOK_RELEASE_DIR names another),
 * copied so that the install block can write its kustomization.yaml beside
 * deploy/; `REGISTRY` a fresh repository in the local cluster's registry
 * (test/cluster/up.sh), so that the node has never seen the image and every
 * pod of the install pulls it; the CLI installed by the mirror block's
 * `npm install -g` into an empty prefix (offline: test/run-all.sh installed
 * the same package outside the namespace, which filled npm's cache);
 * cert-manager running (the local cluster's); an operator in namespace
 * my-operator (test/operators' lfl-operator, its scaffold RBAC). The
 * registry's CA is trusted through SSL_CERT_FILE, as skopeo and helm read it.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/readme-install.test.ts
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { version } from '../../src/version.ts';
import { applyOperatorRbac, operatorManifest } from '../support/operators.ts';
import { admissionRegistration, apiStatus, apps, connectTestCluster, core, kubeconfigPath, rbac } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { deleteNamespaceAndWait, requireCertManager } from '../support/leaderhook.ts';
import { installBlocks } from '../support/install-blocks.ts';
import { podEvents, pullOutcomes, registryCa, registryHost, registryMissing, removeRepositoryFromNode } from '../support/registry.ts';
import { goTool, repo } from '../support/tools.ts';

connectTestCluster();

const OPERATOR_NAMESPACE = 'my-operator';
const releaseDir = process.env.LEADERHOOK_RELEASE_DIR ?? join(repo, 'release', version);

const blocks = installBlocks(repo);

function block(name: string): string {
  const found = blocks.get(name);
  assert.ok(found, `README.md or docs/install.md has a marked ${name} block`);
  return found;
}

/** The user's shell: the copied release folder, REGISTRY, the CLI's prefix and helm on the PATH. */
const user = { cwd: '', registry: '', prefix: '', home: '' };

/** Runs `script` with bash as a user's shell would (stopping at the first failing command); returns its output. */
function runAsUser(name: string, script: string, env: Record<string, string> = {}): string {
  const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: user.cwd,
    encoding: 'utf8',
    timeout: 600_000,
    env: {
      ...process.env,
      ...env,
      KUBECONFIG: kubeconfigPath,
      REGISTRY: user.registry,
      SSL_CERT_FILE: registryCa ?? '',
      // helm's registry logins and caches, and npm's global prefix, in the test's own home.
      HOME: user.home,
      npm_config_prefix: user.prefix,
      npm_config_prefer_offline: 'true',
      npm_config_cache: join(process.env.HOME ?? '/root', '.npm'),
      // The pinned Node runs the installed CLI (it needs 22.10 or later) and npm.
      PATH: [join(user.prefix, 'bin'), join(user.home, 'bin'), dirname(process.execPath), process.env.PATH].join(':'),
    },
  });
  const output = `${run.stdout}${run.stderr}`;
  assert.equal(run.status, 0, `the documentation's ${name} block failed (exit ${run.status ?? run.signal}):\n${output}`);
  return output;
}

/**
 * What the kubelet's Pulled events say of `image` for the container at
 * `fieldPath` of each pod: one outcome a pod, waited for until every pod has one.
 */
async function pullsOf(namespace: string, pods: string[], fieldPath: string, image: string): Promise<string[]> {
  assert.ok(pods.length > 0, `pods in ${namespace} to look at`);
  const outcomes: string[] = [];
  for (const pod of pods) {
    const found = await waitFor(
      `the kubelet's Pulled event of ${image} for ${namespace}/${pod} ${fieldPath}`,
      async () => {
        const seen = pullOutcomes(await podEvents(namespace, pod), fieldPath, image);
        return seen.length > 0 && seen;
      },
      30_000,
    );
    outcomes.push(...found);
  }
  return outcomes;
}

describe("the documentation's install blocks, run as written", { skip: registryMissing() }, () => {
  before(async () => {
    assert.ok(
      existsSync(join(releaseDir, 'SHA256SUMS')),
      `no release in ${releaseDir}: run npm run release (test/run-all.sh does), or set LEADERHOOK_RELEASE_DIR`,
    );
    user.home = mkdtempSync(join(tmpdir(), 'leaderhook-readme-home-'));
    user.cwd = join(user.home, `leaderhook-${version}`);
    cpSync(releaseDir, user.cwd, { recursive: true });
    user.prefix = join(user.home, 'prefix');
    user.registry = `${registryHost}/readme-${randomBytes(3).toString('hex')}`;
    spawnSync('mkdir', ['-p', join(user.home, 'bin')]);
    symlinkSync(goTool('helm'), join(user.home, 'bin', 'helm'));

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
    if (user.home) rmSync(user.home, { recursive: true, force: true });
    // The kubelet's image GC is off in the local cluster: what the install pulled would stay.
    if (user.registry) removeRepositoryFromNode(`${user.registry}/leaderhook`);
  });

  test('mirror: the release verified, the image and the chart pushed to the registry, the CLI on the PATH', () => {
    runAsUser('mirror', block('mirror'));
    const printed = runAsUser('leaderhook version', 'leaderhook version && kubectl-leaderhook version');
    assert.match(printed, new RegExp(`^leaderhook ${version.replaceAll('.', '\\.')} \\(commit [0-9a-f]{7,}`, 'm'));
    assert.ok(existsSync(join(user.prefix, 'bin', 'kubectl-leaderhook')), 'kubectl-leaderhook is installed');
  });

  test('install: deploy/ of the release with the registry image, through cert-manager, the hook bound to the real ServiceAccount, pods injected, leaderhook check all ✓', async (t) => {
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
      assert.equal(pod.spec?.initContainers?.at(-1)?.image, `${user.registry}/leaderhook:${version}`, "the hook runs the registry's image");
    }
    const image = `${user.registry}/leaderhook:${version}`;
    // A fresh repository of the registry is on no node yet: the webhook's
    // pods, which start first, must pull it. On one node the hooks then find it
    // present (test/e2e/registry-pull.test.ts takes it off the node and makes a
    // hook pull it); they must still run that image, from that registry.
    const webhookPods = (await core.listNamespacedPod({ namespace: 'leaderhook-system' })).items.map((p) => p.metadata!.name!);
    const webhookPulls = await pullsOf('leaderhook-system', webhookPods, 'spec.containers{webhook}', image);
    assert.ok(webhookPulls.includes('pulled'), `no webhook pod pulled ${image} from the registry (${webhookPulls.join(', ')})`);
    const hookPulls = await pullsOf(
      OPERATOR_NAMESPACE,
      pods.map((p) => p.metadata!.name!),
      'spec.initContainers{leaderhook-release}',
      image,
    );
    assert.equal(hookPulls.length, pods.length, `every hook started from ${image}`);
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

  test('Helm: install from the registry (oci://), upgrade and uninstall as docs/install.md shows them', async () => {
    await deleteNamespaceAndWait('leaderhook-system');
    runAsUser('helm', block('helm'));
    await assert.rejects(admissionRegistration.readMutatingWebhookConfiguration({ name: 'leaderhook' }), (error) => apiStatus(error) === 404);
  });
});
