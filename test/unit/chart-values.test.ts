/**
 * The chart's defaults are the webhook's: every value of
 * charts/leaderhook/values.yaml that becomes a webhook flag holds that flag's
 * default (src/commands/flags.ts), and the chart's version and image are
 * package.json's and deploy/'s. Rendering is tested in test/chart/, with helm.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { webhookFlags } from '../../src/commands/flags.ts';
import { parseFlags } from '../../src/flags.ts';
import { isResourceQuantity } from '../../src/injector/index.ts';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const values = parse(read('charts/leaderhook/values.yaml'));
const schema = JSON.parse(read('charts/leaderhook/values.schema.json'));
const chart = parse(read('charts/leaderhook/Chart.yaml'));
const kustomization = parse(read('deploy/kustomization.yaml'));
const packageVersion = (JSON.parse(read('package.json')) as { version: string }).version;

/** Values the chart's templates/deployment.yaml passes to a webhook flag (through its env). */
const FLAG_OF_VALUE: Record<string, string> = {
  'image.pullPolicy': 'hook-image-pull-policy',
  observe: 'observe',
  'gracePeriod.floor': 'grace-period-floor',
  'gracePeriod.cap': 'grace-period-cap',
  'hook.resources.requests.cpu': 'hook-cpu-request',
  'hook.resources.requests.memory': 'hook-memory-request',
  'hook.resources.limits.cpu': 'hook-cpu-limit',
  'hook.resources.limits.memory': 'hook-memory-limit',
};

const at = (object: unknown, dotted: string): unknown =>
  dotted.split('.').reduce<unknown>((o, key) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[key] : undefined), object);

describe('charts/leaderhook defaults', () => {
  for (const [path, flag] of Object.entries(FLAG_OF_VALUE)) {
    it(`${path} is the default of --${flag}`, () => {
      const spec = webhookFlags.find((f) => f.name === flag);
      assert.ok(spec, `src/commands/flags.ts has --${flag}`);
      const value = at(values, path);
      // Left out of values.yaml, a value renders no env: only right where the flag's default is none.
      assert.equal(value === undefined ? '' : String(value), spec.default ?? '', `values.yaml ${path} against --${flag}`);
    });
  }

  it("the chart's version and appVersion are package.json's, and its image is deploy/'s", () => {
    assert.equal(chart.appVersion, packageVersion);
    assert.equal(chart.version, packageVersion);
    assert.equal(values.image.tag, '', "an empty tag means the chart's appVersion");
    const deployImage = (kustomization.images as { name: string; newName: string; newTag: string }[]).find((i) => i.name === 'leaderhook');
    assert.deepEqual({ repository: values.image.repository, tag: chart.appVersion }, { repository: deployImage?.newName, tag: deployImage?.newTag });
  });

  it("the default affinity names the webhook's own pods", () => {
    const term = values.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm;
    assert.deepEqual(term.labelSelector.matchLabels, { 'app.kubernetes.io/name': 'leaderhook', 'app.kubernetes.io/component': 'webhook' });
  });

  it('the schema accepts exactly the durations and quantities the webhook accepts, so helm refuses what the webhook would', () => {
    const { gracePeriod, hook } = schema.properties;
    const duration = new RegExp(gracePeriod.properties.floor.pattern);
    for (const sample of ['10s', '1500ms', '1m', '20', '2.5s', 'ten', '10h', '-1s', '1 s', '']) {
      const webhookAccepts = (() => {
        try {
          parseFlags(webhookFlags, [`--grace-period-floor=${sample}`], {});
          return true;
        } catch {
          return false;
        }
      })();
      assert.equal(duration.test(sample), webhookAccepts, `duration ${JSON.stringify(sample)}`);
    }
    for (const [bucket, resource] of [
      ['requests', 'cpu'],
      ['requests', 'memory'],
      ['limits', 'cpu'],
      ['limits', 'memory'],
    ] as const) {
      const quantity = new RegExp(hook.properties.resources.properties[bucket].properties[resource].pattern);
      for (const sample of ['10m', '48Mi', '1', '0.5', '1e3', '2Gi', 'lots', '10 m', '-1', '1.', 'Mi']) {
        assert.equal(quantity.test(sample), isResourceQuantity(sample), `${bucket}.${resource} ${JSON.stringify(sample)}`);
      }
    }
  });
});
