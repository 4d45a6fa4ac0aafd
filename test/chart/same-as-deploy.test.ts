/**
 * kustomize's deploy/ and the chart's defaults (release leaderhook in
 * leaderhook-system, as docs/install.md installs it) render the same objects, field
 * by field, with kustomize and helm built from the Go modules test/tools pins.
 * Differences that are not differences are normalised away first:
 * - deploy/ creates its Namespace; Helm installs into a namespace that exists
 *   before the release does, so docs/install.md's Helm commands create it with
 *   the same labels (checked here against docs/install.md);
 * - Helm's bookkeeping labels (app.kubernetes.io/instance, /version,
 *   /managed-by, helm.sh/chart) are dropped from the chart's metadata.labels;
 * - the webhook container's env is compared as the webhook flags it sets,
 *   parsed by the webhook's own parser: the chart states every setting, deploy/
 *   leaves the defaults to the flags.
 * A failure names each object and field that differs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { webhookFlags } from '../../src/commands/flags.ts';
import { parseFlags } from '../../src/flags.ts';
import { differences } from '../support/object-diff.ts';
import { chartDir, helm, type KubeObject, kustomize, objectKey, parseObjects, repo } from '../support/tools.ts';

const HELM_BOOKKEEPING_LABELS = ['app.kubernetes.io/instance', 'app.kubernetes.io/version', 'app.kubernetes.io/managed-by', 'helm.sh/chart'];
const flagEnvs = new Set<string>(webhookFlags.map((f) => f.env));

/** The webhook container's env as {flags the env sets, env that is no flag}. */
function asWebhookFlags(container: V1Container): V1Container {
  const env = container.env ?? [];
  for (const e of env) assert.ok(e.valueFrom === undefined, `env ${e.name} of the webhook comes from a value, not ${JSON.stringify(e.valueFrom)}`);
  const values = Object.fromEntries(env.filter((e) => flagEnvs.has(e.name)).map((e) => [e.name, e.value ?? '']));
  const { env: _, ...rest } = container;
  return {
    ...rest,
    'env as webhook flags': parseFlags(webhookFlags, [], values).values,
    'env that is no flag': env.filter((e) => !flagEnvs.has(e.name)),
  } as V1Container;
}

function normalise(object: KubeObject, from: 'deploy' | 'chart'): KubeObject {
  const copy = structuredClone(object);
  if (from === 'chart' && copy.metadata.labels) {
    for (const label of HELM_BOOKKEEPING_LABELS) delete copy.metadata.labels[label];
  }
  if (copy.kind === 'Deployment') {
    const spec = (copy as unknown as V1Deployment).spec!.template.spec!;
    spec.containers = spec.containers.map((c) => (c.name === 'webhook' ? asWebhookFlags(c) : c));
  }
  return copy;
}

/** Every object and field where `deployYaml` and `chartYaml` differ once normalised; [] when none. */
function compare(deployYaml: string, chartYaml: string): string[] {
  const deploy = new Map(
    parseObjects(deployYaml)
      .filter((o) => o.kind !== 'Namespace')
      .map((o) => [objectKey(o), normalise(o, 'deploy')]),
  );
  const chart = new Map(parseObjects(chartYaml).map((o) => [objectKey(o), normalise(o, 'chart')]));
  const out: string[] = [];
  for (const key of [...new Set([...deploy.keys(), ...chart.keys()])].sort()) {
    const [d, c] = [deploy.get(key), chart.get(key)];
    if (!d || !c) out.push(`${key}: only in ${d ? 'deploy/' : 'the chart'}`);
    else out.push(...differences(d, c).map((line) => `${key}: ${line}`));
  }
  return out;
}

function assertSame(deployYaml: string, chartYaml: string): void {
  const found = compare(deployYaml, chartYaml);
  assert.deepEqual(found, [], `deploy/ (left) and the chart (right) differ:\n  ${found.join('\n  ')}`);
}

const renderChart = (args: string[] = []) => helm(['template', 'leaderhook', chartDir, '--namespace', 'leaderhook-system', ...args]);

describe('deploy/ and charts/leaderhook render the same objects', () => {
  it('with their defaults', () => {
    assertSame(kustomize(['build', path.join(repo, 'deploy')]), renderChart());
  });

  it("with the image set in one place: kustomize's images: of an overlay, the chart's image.repository and image.tag", () => {
    const overlay = mkdtempSync(path.join(tmpdir(), 'leaderhook-overlay-'));
    try {
      writeFileSync(
        path.join(overlay, 'kustomization.yaml'),
        JSON.stringify({
          apiVersion: 'kustomize.config.k8s.io/v1beta1',
          kind: 'Kustomization',
          resources: [path.relative(overlay, path.join(repo, 'deploy'))],
          images: [{ name: 'leaderhook', newName: 'registry.example.com/team/leaderhook', newTag: '9.9.9' }],
        }),
      );
      assertSame(kustomize(['build', overlay]), renderChart(['--set', 'image.repository=registry.example.com/team/leaderhook', '--set', 'image.tag=9.9.9']));
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });

  it('tells a difference by object and field', () => {
    const found = compare(kustomize(['build', path.join(repo, 'deploy')]), renderChart(['--set', 'gracePeriod.floor=20s', '--set', 'replicas=3']));
    assert.deepEqual(found, [
      'Deployment leaderhook-system/leaderhook-webhook: spec.replicas: 2 -> 3',
      'Deployment leaderhook-system/leaderhook-webhook: spec.template.spec.containers[0].env as webhook flags.grace-period-floor: 10 -> 20',
    ]);
  });

  it("leaves out only deploy/'s Namespace, whose labels docs/install.md's Helm install sets", () => {
    const namespaces = parseObjects(kustomize(['build', path.join(repo, 'deploy')])).filter((o) => o.kind === 'Namespace');
    assert.deepEqual(
      namespaces.map((o) => o.metadata.name),
      ['leaderhook-system'],
    );
    const install = readFileSync(path.join(repo, 'docs/install.md'), 'utf8');
    const helmSection = install.slice(install.indexOf('## Install with Helm'), install.indexOf('\n## ', install.indexOf('## Install with Helm') + 1));
    assert.ok(helmSection.includes('helm install'), 'docs/install.md has a section "Install with Helm"');
    for (const [label, value] of Object.entries(namespaces[0]?.metadata.labels ?? {})) {
      if (label === 'app.kubernetes.io/name' || label === 'app.kubernetes.io/part-of') continue;
      assert.ok(helmSection.includes(`${label}=${value}`), `docs/install.md's Helm install labels the namespace ${label}=${value}`);
    }
  });
});
