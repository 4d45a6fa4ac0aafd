/**
 * Installs leaderhook into the test cluster from deploy/, the way a user
 * would: the cluster's cert-manager (test/cluster/up.sh runs its controller
 * and cainjector, built from its Go module) issues the serving certificate
 * and fills the caBundle, and every object of deploy/ is applied as shipped. The one test-only change is
 * the image: by default the one scripts/build-local-image.sh imported, never pulled; the registry
 * tests name one in the cluster's registry, pulled as shipped (IfNotPresent).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { V1Deployment, V1Pod, V1PodTemplateSpec, V1RoleBinding } from '@kubernetes/client-node';
import { verifyServingCertificate } from '../../src/check/certificate.ts';
import { injectPod } from '../../src/injector/index.ts';
import { goldenSettings } from './injection-settings.ts';
import { parseAllDocuments } from 'yaml';
import {
  applyOperatorRbac,
  type LeaderLock,
  lflLock,
  OPERATOR_CONTAINER,
  type OperatorOptions,
  RELEASE_HOOK_CONTAINER,
  type Scenario,
  setUpOperator,
} from './operators.ts';
import { heartbeats, waitForRecorded } from './recording.ts';
import {
  admissionRegistration,
  apiStatus,
  apps,
  broughtOwnCluster,
  clusterStateDir,
  core,
  createTestNamespace,
  kubeconfigPath,
  rbac,
  type TestNamespace,
} from './kube.ts';
import { waitFor } from './wait.ts';

const repo = path.join(import.meta.dirname, '../..');
export const leaderhookImage = process.env.LEADERHOOK_TEST_IMAGE ?? 'leaderhook.test/leaderhook:dev';
export const INJECTION_LABEL = { 'leaderhook.io/injection': 'enabled' };
/**
 * `pod` as the webhook would admit it, with the test image (never pulled): the
 * pure injector with the webhook's defaults, for benchmarks that measure the
 * kubelet's cost of the hook and not the webhook's.
 */
export function injectedWithTestImage(pod: V1Pod): V1Pod {
  return injectPod(pod, { ...goldenSettings, image: leaderhookImage, imagePullPolicy: 'Never' }).pod;
}

/** The same for a Deployment's pod template, in place. */
export function injectTemplate<D extends V1Deployment & { spec: { template: V1PodTemplateSpec } }>(deployment: D): D {
  const { metadata, spec } = injectedWithTestImage({ metadata: deployment.spec.template.metadata, spec: deployment.spec.template.spec });
  deployment.spec.template = { metadata, spec };
  return deployment;
}

/** A namespace whose pods that lack POD_NAME are refused while the webhook is down (deploy/mutatingwebhookconfiguration.yaml). */
export const REQUIRED_INJECTION_LABEL = { 'leaderhook.io/injection': 'required' };
const NAMESPACE = 'leaderhook-system';

export function kubectl(args: string[], input?: string): string {
  try {
    return execFileSync('kubectl', ['--kubeconfig', kubeconfigPath, ...args], { cwd: repo, encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')}: ${e.stderr || e.message}`);
  }
}

/** kubectl with its stderr too, where it prints admission warnings (`Warning: ...`). */
export function kubectlWithWarnings(args: string[], input?: string): { stdout: string; warnings: string[] } {
  const run = spawnSync('kubectl', ['--kubeconfig', kubeconfigPath, ...args], { cwd: repo, encoding: 'utf8', input });
  if (run.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${run.stderr || run.error?.message}`);
  const warnings = run.stderr
    .split('\n')
    .filter((l) => l.startsWith('Warning: '))
    .map((l) => l.slice('Warning: '.length));
  return { stdout: run.stdout, warnings };
}

type Manifest = { kind: string; metadata: { name: string }; [key: string]: unknown };

function setEnv(deployment: V1Deployment, values: Record<string, string>): void {
  const container = deployment.spec!.template.spec!.containers[0]!;
  const env = (container.env ?? []).filter((e) => !(e.name in values));
  container.env = [...env, ...Object.entries(values).map(([name, value]) => ({ name, value }))];
}

/** Deletes a namespace (if present) and waits until it is gone, so it can be created afresh. */
export async function deleteNamespaceAndWait(name: string): Promise<void> {
  await core.deleteNamespace({ name }).catch((error) => {
    if (apiStatus(error) !== 404) throw error;
  });
  await waitFor(
    `namespace ${name} to be gone`,
    async () =>
      core.readNamespace({ name }).then(
        () => false,
        (error) => apiStatus(error) === 404,
      ),
    120_000,
    500,
  );
}

/**
 * Proves the whole admission path works — API server, Service, kube-proxy,
 * webhook pod, certificate — by a dry-run pod create in an opted-in namespace
 * that must come back injected.
 */
async function waitUntilInjecting(): Promise<void> {
  const probe = await createTestNamespace('webhook-probe', INJECTION_LABEL);
  try {
    await waitFor(
      'the webhook to inject a dry-run pod',
      async () => {
        const pod = await core.createNamespacedPod({
          namespace: probe.name,
          dryRun: 'All',
          body: { metadata: { name: 'probe' }, spec: { containers: [{ name: 'c', image: leaderhookImage }] } },
        });
        return pod.metadata?.annotations?.['leaderhook.io/injected'] !== undefined;
      },
      60_000,
      500,
    );
  } finally {
    await probe.cleanup();
  }
}

/**
 * What the API server would refuse in the serving certificate of deploy/'s
 * Secret (in `secretNamespace`), given each entry's caBundle of `registration`
 * (the check command's verdict); none once cainjector has copied the CA that
 * signed it. The name verified is deploy/'s Service in leaderhook-system, as
 * deploy/certificates.yaml names it wherever it is applied.
 */
export async function caBundleRefusals(registration = 'leaderhook', secretNamespace = NAMESPACE): Promise<string[]> {
  const config = await admissionRegistration.readMutatingWebhookConfiguration({ name: registration });
  const secret = await core.readNamespacedSecret({ name: 'leaderhook-webhook-tls', namespace: secretNamespace });
  const chain = Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
  const entries = config.webhooks ?? [];
  if (entries.length === 0) return ['the registration has no entries'];
  return entries.flatMap((entry) => {
    const caBundle = Buffer.from(entry.clientConfig.caBundle ?? '', 'base64').toString('utf8');
    const { problems } = verifyServingCertificate({ caBundle, chain, dnsName: `leaderhook-webhook.${NAMESPACE}.svc`, now: new Date() });
    return problems.map((problem) => `${entry.name}: ${problem}`);
  });
}

/**
 * deploy/ rendered the way a user sets the image: an overlay with `images:`
 * and the pull policy. deploy/'s replacements must carry both into the hook
 * image the webhook injects; nothing here sets the hook's image directly.
 */
export function renderWithImage(image: string, pullPolicy: string): string {
  const overlay = mkdtempSync(path.join(tmpdir(), 'leaderhook-overlay-'));
  try {
    const at = image.lastIndexOf(':');
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      // kustomize takes bases by relative path only
      resources: [path.relative(overlay, path.join(repo, 'deploy'))],
      images: [{ name: 'leaderhook', newName: image.slice(0, at), newTag: image.slice(at + 1) }],
      patches: [
        {
          target: { kind: 'Deployment', name: 'leaderhook-webhook' },
          patch: JSON.stringify([{ op: 'replace', path: '/spec/template/spec/containers/0/imagePullPolicy', value: pullPolicy }]),
        },
      ],
    };
    writeFileSync(path.join(overlay, 'kustomization.yaml'), JSON.stringify(kustomization));
    return kubectl(['kustomize', overlay]);
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
}

/** Where the local cluster's cert-manager logs (test/cluster/up.sh), for the errors of what needed it. */
export const certManagerLogs = broughtOwnCluster
  ? "your cluster's cert-manager"
  : `${clusterStateDir}/logs/cert-manager-controller.log and cert-manager-cainjector.log`;

/**
 * Fails with a message that says what to do unless cert-manager's CRDs are
 * served: a user installs cert-manager before leaderhook, and the local
 * cluster's up.sh does.
 */
export function requireCertManager(): void {
  try {
    kubectl(['wait', '--for=condition=Established', '--timeout=10s', 'crd/certificates.cert-manager.io', 'crd/issuers.cert-manager.io']);
  } catch (error) {
    const remedy = broughtOwnCluster ? 'install cert-manager in the cluster of LEADERHOOK_KUBECONFIG' : 'run test/cluster/up.sh, which starts it';
    throw new Error(`cert-manager is not installed (${(error as Error).message.trim()}): ${remedy}`, { cause: error });
  }
}

export interface InstallOptions {
  /** Logs at debug level, for the tests' diagnostics; false for benchmarks, which measure the image as shipped. */
  debugLog?: boolean;
  /** The image set with `images:`; default the one scripts/build-local-image.sh imported. */
  image?: string;
  /** The webhook's imagePullPolicy; default Never, since an imported image has no registry to come from. */
  pullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
}

/**
 * Applies deploy/ and waits until the webhook injects pods; returns an
 * uninstall.
 */
export async function installLeaderhook({ debugLog = true, image = leaderhookImage, pullPolicy = 'Never' }: InstallOptions = {}): Promise<() => Promise<void>> {
  // A namespace left Terminating by an earlier run would refuse new objects.
  await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch(() => {});
  await deleteNamespaceAndWait(NAMESPACE);
  requireCertManager();
  try {
    const objects = parseAllDocuments(renderWithImage(image, pullPolicy)).map((doc) => doc.toJS() as Manifest);
    for (const object of objects) {
      if (object.kind === 'Deployment' && debugLog) setEnv(object as unknown as V1Deployment, { LEADERHOOK_LOG_LEVEL: 'debug' });
    }
    // The namespace first, the webhook registration last: pods are never sent
    // to a webhook that is not there yet (failurePolicy Ignore would hide it).
    const ordered = [
      ...objects.filter((o) => o.kind === 'Namespace'),
      ...objects.filter((o) => o.kind !== 'Namespace' && o.kind !== 'MutatingWebhookConfiguration'),
    ];
    kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], ordered.map((o) => JSON.stringify(o)).join('\n'));
    kubectl(['wait', '-n', NAMESPACE, '--for=condition=Ready', '--timeout=60s', 'certificate/leaderhook-webhook']);
    await waitFor(
      'the leaderhook webhook Deployment to be available',
      async () => {
        const d = await apps.readNamespacedDeployment({ name: 'leaderhook-webhook', namespace: NAMESPACE });
        return (d.status?.availableReplicas ?? 0) >= 1 && (d.status?.readyReplicas ?? 0) === d.spec?.replicas;
      },
      120_000,
    );
    kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(objects.find((o) => o.kind === 'MutatingWebhookConfiguration')));
    let refused: string[] = [];
    await waitFor(
      "cert-manager's cainjector to fill every webhook entry's caBundle with the CA that signed the serving certificate",
      async () => {
        refused = await caBundleRefusals();
        return refused.length === 0;
      },
      60_000,
    ).catch((error) => {
      throw new Error(`${(error as Error).message}: ${refused.join('; ')}`, { cause: error });
    });
    await waitUntilInjecting();
  } catch (error) {
    throw new Error(`installing leaderhook (cert-manager logs: ${certManagerLogs}): ${(error as Error).message}`, { cause: error });
  }

  return async () => {
    await admissionRegistration.deleteMutatingWebhookConfiguration({ name: 'leaderhook' }).catch((error) => {
      if (apiStatus(error) !== 404) throw error;
    });
    await deleteNamespaceAndWait(NAMESPACE);
  };
}

/** Applies `dir`'s Role in `namespace` and binds it to `serviceAccount`, as a user installing it does. */
async function bindHookRole(namespace: string, dir: string, serviceAccount: string): Promise<void> {
  kubectl(['apply', '-n', namespace, '-f', `${dir}/role.yaml`]);
  const binding = parseAllDocuments(kubectl(['kustomize', dir]))
    .map((doc) => doc.toJS() as V1RoleBinding)
    .find((o) => o.kind === 'RoleBinding')!;
  binding.metadata = { ...binding.metadata, namespace };
  binding.subjects = [{ kind: 'ServiceAccount', name: serviceAccount, namespace }];
  await rbac.createNamespacedRoleBinding({ namespace, body: binding });
}

/**
 * Grants the release hook its Role (deploy/operator-rbac) in `namespace`,
 * bound to the operator's service account, as the README tells users to.
 */
export function grantReleaseHook(namespace: string, serviceAccount: string): Promise<void> {
  return bindHookRole(namespace, 'deploy/operator-rbac', serviceAccount);
}

/** deploy/operator-rbac-kopf's opt-in Role, bound the same way: the hook may remove kopf peering entries. */
export function grantKopfPeering(namespace: string, serviceAccount: string): Promise<void> {
  return bindHookRole(namespace, 'deploy/operator-rbac-kopf', serviceAccount);
}

/**
 * An operator of test/operators in a namespace opted in to leaderhook, the
 * hook's Role bound to the operators' ServiceAccount, the hook's logs
 * recorded too. The POD_NAME env of the manifests is removed: the webhook
 * must add it.
 */
export function setUpWithHook(t: Pick<TestContext, 'after'>, operator: string, options: OperatorOptions): Promise<Scenario> {
  return setUpOperator(t, {
    prefix: operator.replace(/-operator$/, '-hook'),
    operator,
    options: { ...options, withoutPodNameEnv: true },
    labels: INJECTION_LABEL,
    containers: [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER],
    prepare: (namespace) => grantReleaseHook(namespace, 'test-operator'),
  });
}

/** The same operator in a namespace not opted in: it runs as in the baseline (the manifests carry POD_NAME where the operator needs it). */
export function setUpWithoutHook(t: Pick<TestContext, 'after'>, operator: string, options: OperatorOptions): Promise<Scenario> {
  return setUpOperator(t, { prefix: operator.replace(/-operator$/, '-control'), operator, options });
}

/** The leader-for-life lock of test/operators' lfl-operator, as it is now: its holder pod and UIDs; undefined when absent or being deleted. */
export async function readLflLock(namespace: string): Promise<{ holder: string; holderUid: string; uid: string } | undefined> {
  try {
    const cm = await core.readNamespacedConfigMap({ name: lflLock.name, namespace });
    const owner = cm.metadata?.ownerReferences?.[0];
    if (!owner || cm.metadata?.deletionTimestamp) return undefined;
    return { holder: owner.name, holderUid: owner.uid, uid: cm.metadata?.uid as string };
  } catch (error) {
    if (apiStatus(error) === 404) return undefined;
    throw error;
  }
}

/**
 * A namespace for test/operators' operators under leaderhook: restricted Pod
 * Security, `labels` (the injection mode), the operators' RBAC and the hook's
 * Role bound to their ServiceAccount — in that order, as users must.
 */
export async function createOperatorNamespace(prefix: string, labels: Record<string, string>): Promise<TestNamespace> {
  const ns = await createTestNamespace(prefix, { 'pod-security.kubernetes.io/enforce': 'restricted', ...labels });
  await applyOperatorRbac(ns.name);
  await grantReleaseHook(ns.name, 'test-operator');
  return ns;
}

/** The finalizer the tests put on a pod to hold its object Terminating after its containers stopped. */
const HOLD_FINALIZER = 'leaderhook.test/hold';

/** Holds `pod` Terminating once deleted (a finalizer), as a stuck volume detach or controller would. */
export function holdTerminating(namespace: string, pod: string): void {
  kubectl(['-n', namespace, 'patch', 'pod', pod, '--type=merge', '-p', JSON.stringify({ metadata: { finalizers: [HOLD_FINALIZER] } })]);
}

/**
 * Fails `pod` by its kubelet without deleting it: activeDeadlineSeconds set
 * to one second past its running time (a pod's deadline may be set or
 * lowered on a live pod), so the kubelet kills its containers and the pod
 * ends Failed (DeadlineExceeded) and stays, as an evicted or shut-down pod
 * does. Resolves with when the deadline was set: the trial's time zero.
 */
export async function failByDeadline(namespace: string, pod: string): Promise<number> {
  const read = await core.readNamespacedPod({ name: pod, namespace });
  const running = Math.ceil((Date.now() - new Date(read.status?.startTime ?? Date.now()).getTime()) / 1000);
  const deadlineSet = Date.now();
  kubectl(['-n', namespace, 'patch', 'pod', pod, '--type=merge', '-p', JSON.stringify({ spec: { activeDeadlineSeconds: running + 1 } })]);
  return deadlineSet;
}

/** Lets a held pod go; a pod already gone is fine. */
export function releaseTerminating(namespace: string, pod: string): void {
  try {
    kubectl(['-n', namespace, 'patch', 'pod', pod, '--type=merge', '-p', JSON.stringify({ metadata: { finalizers: null } })]);
  } catch (error) {
    if (!/NotFound|not found/.test((error as Error).message)) throw error;
  }
}

/**
 * `kubectl rollout restart` of an operator's Deployment, until the rollout is
 * done and a pod of the new ReplicaSet holds `lock` and has written three
 * heartbeats; resolves with that pod's name.
 */
export async function rolloutRestartUntilNewLeader<L>(scenario: Scenario, operator: string, lock: LeaderLock<L>): Promise<string> {
  const { recording, namespace } = scenario;
  const oldPods = new Set((await core.listNamespacedPod({ namespace })).items.map((p) => p.metadata?.name as string));
  kubectl(['-n', namespace, 'rollout', 'restart', `deployment/${operator}`]);
  kubectl(['-n', namespace, 'rollout', 'status', `deployment/${operator}`, '--timeout=240s']);
  return waitForRecorded(
    recording,
    'a pod of the new ReplicaSet to lead',
    async () => {
      const holder = lock.holderOf(lock.events(recording).at(-1)?.object);
      const beats = heartbeats(recording, lock.heartbeat).filter((b) => b.holder === holder);
      return holder && !oldPods.has(holder) && beats.length >= 3 ? holder : undefined;
    },
    180_000,
  );
}
