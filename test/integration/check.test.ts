/**
 * `leaderhook check` against a real cluster, as a user runs it after the
 * install: on a healthy install every line is ✓ and it exits 0; break one
 * thing a user breaks — the hook's RoleBinding, the webhook scaled to 0 —
 * and exactly the checks that depend on it turn ✗, with exit 1.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../support/cli.ts';
import { createOperator } from '../support/operators.ts';
import { apps, connectTestCluster, core, kubeconfigPath, rbac, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { createOperatorNamespace, grantReleaseHook, INJECTION_LABEL, installLeaderhook, kubectl } from '../support/leaderhook.ts';

connectTestCluster();

const SYSTEM = 'leaderhook-system';
/** The RoleBinding grantReleaseHook creates (deploy/operator-rbac/rolebinding.yaml). */
const HOOK_ROLE_BINDING = 'leaderhook-release';
/** The RoleBindings of test/operators/rbac.yaml. */
const SCAFFOLD_ROLE_BINDINGS = ['leader-election-rolebinding', 'manager-rolebinding'];
const CHECK_TIMEOUT_MS = 60_000;

interface CheckRun {
  status: number | null;
  lines: string[];
  stderr: string;
}

async function runCheck(namespace: string): Promise<CheckRun> {
  const { status, stdout, stderr } = await runCli(['check', '--kubeconfig', kubeconfigPath, '--namespace', namespace], { timeoutMs: CHECK_TIMEOUT_MS });
  return { status, lines: stdout.trimEnd().split('\n'), stderr };
}

/** The titles of the ✗ lines: "TITLE: detail", where a namespace's titles are "namespace N: check". */
function failures(run: CheckRun): string[] {
  return run.lines
    .filter((l) => l.startsWith('✗ '))
    .map((l) => {
      const text = l.slice(2);
      const first = text.indexOf(': ');
      return text.slice(0, text.startsWith('namespace ') ? text.indexOf(': ', first + 2) : first);
    });
}

async function scaleWebhook(replicas: number): Promise<void> {
  kubectl(['-n', SYSTEM, 'scale', 'deployment/leaderhook-webhook', `--replicas=${replicas}`]);
  await waitFor(
    `the webhook at ${replicas} ready replicas`,
    async () => {
      const d = await apps.readNamespacedDeployment({ name: 'leaderhook-webhook', namespace: SYSTEM });
      const pods = await core.listNamespacedPod({ namespace: SYSTEM, labelSelector: 'app.kubernetes.io/component=webhook' });
      return replicas === 0 ? pods.items.length === 0 : (d.status?.readyReplicas ?? 0) === replicas;
    },
    120_000,
    250,
  );
}

describe('leaderhook check on a real cluster', () => {
  let uninstall: (() => Promise<void>) | undefined;
  let ns: TestNamespace | undefined;

  before(async () => {
    uninstall = await installLeaderhook();
    ns = await createOperatorNamespace('check', INJECTION_LABEL);
    await createOperator(ns.name, 'lfl-operator', { shape: 'deployment', withoutPodNameEnv: true });
    const namespace = ns.name;
    await waitFor(
      'the operator pods to run, injected',
      async () => {
        const pods = (await core.listNamespacedPod({ namespace })).items;
        return pods.length > 0 && pods.every((p) => p.metadata?.annotations?.['leaderhook.io/injected'] && p.spec?.nodeName && p.status?.phase === 'Running');
      },
      120_000,
      500,
    );
  });
  after(async () => {
    await ns?.cleanup();
    await uninstall?.();
  });

  test('a healthy install: every line ✓, exit 0', async (t) => {
    const run = await runCheck(ns!.name);
    t.diagnostic(run.lines.join('\n'));
    assert.equal(run.status, 0, `${run.lines.join('\n')}\n${run.stderr}`);
    assert.deepEqual(failures(run), []);
    for (const title of [
      'API server',
      'webhook registration',
      'serving certificate',
      'webhook endpoints',
      'opted-in namespaces',
      `namespace ${ns!.name}: dry-run pod`,
      `namespace ${ns!.name}: hook permissions of ServiceAccount test-operator`,
      `namespace ${ns!.name}: pods injected`,
      `namespace ${ns!.name}: hook image`,
    ]) {
      assert.ok(
        run.lines.some((l) => l.startsWith(`✓ ${title}: `)),
        `no ✓ line for ${title}:\n${run.lines.join('\n')}`,
      );
    }
    assert.match(run.lines.at(-1) ?? '', /^all \d+ checks passed$/);
  });

  test("without the hook's RoleBinding, its permission line turns ✗ with the remedy, exit 1", async (t) => {
    const namespace = ns!.name;
    // The scaffold's RBAC (test/operators/rbac.yaml) grants the operator's ServiceAccount much of what the
    // hook needs too (pods, events, configmaps: *): without it, the hook's own binding is what is missing.
    const scaffold = await Promise.all(SCAFFOLD_ROLE_BINDINGS.map((name) => rbac.readNamespacedRoleBinding({ name, namespace })));
    for (const name of [HOOK_ROLE_BINDING, ...SCAFFOLD_ROLE_BINDINGS]) await rbac.deleteNamespacedRoleBinding({ name, namespace });
    try {
      const run = await runCheck(namespace);
      t.diagnostic(run.lines.join('\n'));
      assert.equal(run.status, 1);
      assert.deepEqual(failures(run), [`namespace ${namespace}: hook permissions of ServiceAccount test-operator`]);
      const line = run.lines.find((l) => l.startsWith('✗ '))!;
      assert.match(line, /lacks configmaps get, .*events create/);
      assert.match(line, new RegExp(`fix: kubectl apply -n ${namespace} -f deploy/operator-rbac/role.yaml && kubectl create rolebinding`));
    } finally {
      await grantReleaseHook(namespace, 'test-operator');
      for (const { metadata, roleRef, subjects } of scaffold) {
        await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name: metadata?.name }, roleRef, subjects } });
      }
    }
  });

  test('with the webhook scaled to 0, endpoints and the dry-run pod turn ✗, exit 1', async (t) => {
    await scaleWebhook(0);
    try {
      const run = await runCheck(ns!.name);
      t.diagnostic(run.lines.join('\n'));
      assert.equal(run.status, 1);
      assert.deepEqual(failures(run), ['webhook endpoints', `namespace ${ns!.name}: dry-run pod`]);
    } finally {
      await scaleWebhook(2);
    }
    // Endpoints follow readiness within a second or so; then the dry run is injected again.
    await waitFor('leaderhook check to pass again once the webhook is back', async () => (await runCheck(ns!.name)).status === 0, 60_000, 1_000);
  });
});
