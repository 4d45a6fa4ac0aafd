/**
 * charts/leaderhook without a cluster, with the helm that test/tools pins:
 * - helm lint --strict passes with the defaults and every golden case;
 * - `helm template` of test/testdata/chart/NAME.values.yaml is
 *   NAME.rendered.yaml (REFRESH_GOLDEN=1 rewrites them);
 * - every value reaches the webhook flag or field it names, the registration
 *   keeps its guarantees whatever the user's selectors, and values that could
 *   only break an install are refused at install time, naming the value.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { V1Deployment, V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { webhookFlags } from '../../src/commands/flags.ts';
import { parseFlags } from '../../src/flags.ts';
import { assertPodEntries, assertWorkloadEntry } from '../support/registration.ts';
import { chartDir, helm, type KubeObject, objectKey, parseObjects, repo } from '../support/tools.ts';

const goldenDir = path.join(repo, 'test/testdata/chart');
const cases = readdirSync(goldenDir)
  .filter((f) => f.endsWith('.values.yaml'))
  .map((f) => f.slice(0, -'.values.yaml'.length))
  .sort();

/** `helm template` as docs/install.md installs: release leaderhook in leaderhook-system. */
function render(args: string[], release = 'leaderhook', namespace = 'leaderhook-system'): string {
  return helm(['template', release, chartDir, '--namespace', namespace, ...args]);
}

function find<T>(objects: KubeObject[], kind: string): T {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind} among ${objects.map(objectKey).join(', ')}`);
  return found[0] as unknown as T;
}

function webhookContainer(objects: KubeObject[]) {
  const container = find<V1Deployment>(objects, 'Deployment').spec?.template.spec?.containers.find((c) => c.name === 'webhook');
  assert.ok(container, 'the Deployment has a container webhook');
  return container;
}

/** The webhook's flags as the rendered Deployment sets them, parsed by the webhook's own parser. */
function webhookFlagValues(objects: KubeObject[]): Readonly<Record<string, string | number | boolean | undefined>> {
  const env = Object.fromEntries((webhookContainer(objects).env ?? []).map((e) => [e.name, e.value]));
  return parseFlags(webhookFlags, [], env).values;
}

const pemFor = (name: string) => `-----BEGIN CERTIFICATE-----\n${Buffer.from(name).toString('base64')}\n-----END CERTIFICATE-----\n`;

describe('charts/leaderhook', () => {
  it('passes helm lint --strict with its defaults and with every golden case', () => {
    assert.match(helm(['lint', '--strict', chartDir]), /1 chart\(s\) linted, 0 chart\(s\) failed/);
    for (const name of cases) {
      assert.match(helm(['lint', '--strict', chartDir, '-f', path.join(goldenDir, `${name}.values.yaml`)]), /0 chart\(s\) failed/, name);
    }
  });

  for (const name of cases) {
    it(`renders ${name}.values.yaml as ${name}.rendered.yaml`, () => {
      const rendered = render(['-f', path.join(goldenDir, `${name}.values.yaml`)]);
      const golden = path.join(goldenDir, `${name}.rendered.yaml`);
      if (process.env.REFRESH_GOLDEN === '1') writeFileSync(golden, rendered);
      assert.ok(existsSync(golden), `${golden} is missing: run with REFRESH_GOLDEN=1 to write it`);
      assert.equal(rendered, readFileSync(golden, 'utf8'), `helm template differs from ${golden} (REFRESH_GOLDEN=1 rewrites it after a deliberate change)`);
    });
  }

  it('has no rendered golden without its values file', () => {
    const stale = readdirSync(goldenDir).filter((f) => f.endsWith('.rendered.yaml') && !cases.includes(f.slice(0, -'.rendered.yaml'.length)));
    assert.deepEqual(stale, []);
  });

  it('keeps every registration guarantee with its defaults, and with selectors and failure policies of the user', () => {
    const defaults = find<V1MutatingWebhookConfiguration>(parseObjects(render([])), 'MutatingWebhookConfiguration');
    assertWorkloadEntry(defaults);
    assertPodEntries(defaults, 'leaderhook-system');

    const custom = find<V1MutatingWebhookConfiguration>(
      parseObjects(render(['-f', path.join(goldenDir, 'every-value.values.yaml')])),
      'MutatingWebhookConfiguration',
    );
    assertWorkloadEntry(custom);
    assertPodEntries(custom, 'leaderhook-system', { enabled: 'Fail', required: 'Ignore' });
    for (const entry of custom.webhooks ?? []) {
      assert.equal(entry.namespaceSelector?.matchLabels?.team, 'platform', `${entry.name}: the user's namespace labels`);
      assert.deepEqual(entry.namespaceSelector?.matchExpressions?.at(-1), { key: 'environment', operator: 'NotIn', values: ['sandbox'] }, entry.name);
      if (entry.name === 'warn-workloads.leaderhook.io') {
        assert.equal(entry.objectSelector, undefined, 'pod labels select pods, not the workloads that create them');
      } else {
        assert.equal(entry.objectSelector?.matchLabels?.['leader-election'], 'operator-lib', entry.name);
        assert.deepEqual(entry.objectSelector?.matchExpressions?.at(-1), { key: 'app.kubernetes.io/managed-by', operator: 'Exists' }, entry.name);
      }
    }
  });

  it('passes every value to the webhook flag it names', () => {
    const defaults = webhookFlagValues(parseObjects(render([])));
    assert.deepEqual({ ...defaults }, { ...parseFlags(webhookFlags, [], {}).values, 'hook-image': 'leaderhook:0.1.0' }, "the defaults are the flags' defaults");

    const custom = webhookFlagValues(parseObjects(render(['-f', path.join(goldenDir, 'every-value.values.yaml')])));
    assert.deepEqual(Object.fromEntries(Object.entries(custom).filter(([flag, value]) => value !== defaults[flag])), {
      'hook-image': 'registry.example.com/team/leaderhook:9.9.9',
      'hook-image-pull-policy': 'Always',
      observe: true,
      'grace-period-floor': 20,
      'grace-period-cap': 60,
      'hook-cpu-request': '20m',
      'hook-memory-request': '64Mi',
      'hook-cpu-limit': '200m',
      'hook-memory-limit': '128Mi',
    });
    // --set gives numbers, not strings: a bare number of seconds is the flag's too.
    assert.equal(webhookFlagValues(parseObjects(render(['--set', 'gracePeriod.floor=25'])))['grace-period-floor'], 25);
  });

  it("sets the webhook's image and the hook's from one value, by tag or by digest", () => {
    const image = (args: string[]) => {
      const container = webhookContainer(parseObjects(render(args)));
      const env = (name: string) => container.env?.find((e) => e.name === name)?.value;
      return {
        image: container.image,
        pullPolicy: container.imagePullPolicy,
        hook: env('LEADERHOOK_HOOK_IMAGE'),
        hookPullPolicy: env('LEADERHOOK_HOOK_IMAGE_PULL_POLICY'),
      };
    };
    assert.deepEqual(image([]), { image: 'leaderhook:0.1.0', pullPolicy: 'IfNotPresent', hook: 'leaderhook:0.1.0', hookPullPolicy: 'IfNotPresent' });
    const digest = `sha256:${'ab'.repeat(32)}`;
    assert.deepEqual(image(['--set', 'image.repository=leaderhook.test/leaderhook', '--set', `image.digest=${digest}`, '--set', 'image.pullPolicy=Never']), {
      image: `leaderhook.test/leaderhook@${digest}`,
      pullPolicy: 'Never',
      hook: `leaderhook.test/leaderhook@${digest}`,
      hookPullPolicy: 'Never',
    });
  });

  it('without cert-manager: no cert-manager object, the given CA in every entry and the given Secret mounted', () => {
    const objects = parseObjects(render(['-f', path.join(goldenDir, 'without-cert-manager.values.yaml')]));
    assert.deepEqual(objects.filter((o) => o.apiVersion.startsWith('cert-manager.io/')).map(objectKey), []);
    const config = find<V1MutatingWebhookConfiguration>(objects, 'MutatingWebhookConfiguration');
    assert.equal(config.metadata?.annotations?.['cert-manager.io/inject-ca-from'], undefined);
    const pem = Buffer.from(config.webhooks?.[0]?.clientConfig.caBundle ?? '', 'base64').toString();
    assert.match(pem, /^-----BEGIN CERTIFICATE-----\nc3RhbmQ/);
    assert.deepEqual(new Set(config.webhooks?.map((w) => w.clientConfig.caBundle)).size, 1, 'every entry trusts the same CA');
    const volumes = find<V1Deployment>(objects, 'Deployment').spec?.template.spec?.volumes;
    assert.deepEqual(volumes, [{ name: 'tls', secret: { secretName: 'leaderhook-serving' } }]);
  });

  it('names its objects after the release and keeps the release namespace out, with cert-manager naming the Service', () => {
    const objects = parseObjects(render([], 'acme', 'platform'));
    assert.deepEqual(objects.map(objectKey).sort(), [
      'Certificate platform/acme-leaderhook-ca',
      'Certificate platform/acme-leaderhook-webhook',
      'Deployment platform/acme-leaderhook-webhook',
      'Issuer platform/acme-leaderhook-ca',
      'Issuer platform/acme-leaderhook-selfsigned',
      'MutatingWebhookConfiguration acme-leaderhook',
      'PodDisruptionBudget platform/acme-leaderhook-webhook',
      'Service platform/acme-leaderhook-webhook',
      'ServiceAccount platform/acme-leaderhook-webhook',
    ]);
    const config = find<V1MutatingWebhookConfiguration>(objects, 'MutatingWebhookConfiguration');
    assertPodEntries(config, 'platform');
    assert.equal(config.metadata?.annotations?.['cert-manager.io/inject-ca-from'], 'platform/acme-leaderhook-webhook');
    for (const entry of config.webhooks ?? [])
      assert.deepEqual(entry.clientConfig.service, { name: 'acme-leaderhook-webhook', namespace: 'platform', path: '/mutate', port: 443 });
    const serving = objects.find((o) => o.kind === 'Certificate' && o.metadata.name === 'acme-leaderhook-webhook') as unknown as {
      spec: { dnsNames: string[]; secretName: string };
    };
    assert.ok(serving.spec.dnsNames.includes('acme-leaderhook-webhook.platform.svc'), serving.spec.dnsNames.join(', '));
    assert.equal(serving.spec.secretName, 'acme-leaderhook-webhook-tls');
  });

  describe('refuses values that could only break an install, naming the value', () => {
    const refusals: [string, string[], RegExp][] = [
      ['a failure policy that is neither Ignore nor Fail', ['--set', 'failurePolicy.required=Sometimes'], /failurePolicy\/required/],
      ['a misspelt value', ['--set', 'gracePeriod.flor=20s'], /additional properties 'flor' not allowed/],
      ['an unknown pull policy', ['--set', 'image.pullPolicy=Sometimes'], /image\/pullPolicy/],
      ['a duration that is not one', ['--set', 'gracePeriod.floor=ten'], /gracePeriod\/floor/],
      ['a hook resource that is not a quantity', ['--set', 'hook.resources.limits.memory=lots'], /hook\/resources\/limits\/memory/],
      [
        'no CA bundle without cert-manager',
        ['--set', 'certManager.enabled=false'],
        /tls\.caBundle: the PEM of the CA .* is required when certManager\.enabled is false/,
      ],
      [
        'a CA bundle given as base64',
        ['--set', 'certManager.enabled=false', '--set', `tls.caBundle=${Buffer.from(pemFor('ca')).toString('base64')}`],
        /tls\.caBundle: not a PEM certificate/,
      ],
    ];
    for (const [what, args, message] of refusals) {
      it(what, () => {
        assert.throws(() => render(args), message);
      });
    }
  });
});
