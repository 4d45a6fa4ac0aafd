import assert from 'node:assert/strict';
import { test } from 'node:test';
import { injectPod } from '../../../src/injector/index.ts';
import { goldenSettings } from '../../support/injection-settings.ts';

test('input that is not a pod is skipped with a reason, not thrown on', () => {
  for (const input of [null, 'pod', 42, [], {}, { spec: {} }, { spec: { containers: 'x' } }]) {
    const result = injectPod(input, goldenSettings);
    assert.equal(result.reason, 'notAPod');
    assert.deepEqual(result.patch, []);
  }
});

test('managedFields are neither patched nor lost', () => {
  const managedFields = [{ manager: 'kubectl', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }];
  const pod = { metadata: { name: 'p', managedFields }, spec: { containers: [{ name: 'c', image: 'i' }] } };
  const result = injectPod(pod, goldenSettings);
  assert.equal(result.reason, 'injected');
  assert.ok(!result.patch.some((op) => op.path.startsWith('/metadata/managedFields')), JSON.stringify(result.patch));
  assert.deepEqual(result.pod.metadata?.managedFields, managedFields);
});

test('a second hook container left by someone else is collapsed to exactly one, last', () => {
  const hook = { name: 'leaderhook-release', image: 'old' };
  const pod = { spec: { initContainers: [hook, { name: 'a', image: 'a' }, hook], containers: [{ name: 'c', image: 'i' }] } };
  const result = injectPod(pod, goldenSettings);
  const names = result.pod.spec?.initContainers?.map((c) => c.name);
  assert.deepEqual(names, ['a', 'leaderhook-release']);
  assert.equal(result.pod.spec?.initContainers?.[1]?.image, goldenSettings.image);
});

test('the injector does not modify its input', () => {
  const pod = { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i' }] } };
  const copy = structuredClone(pod);
  injectPod(pod, goldenSettings);
  assert.deepEqual(pod, copy);
});

test('warnings stay within the 120 characters the API server advises', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  const { parse } = await import('yaml');
  const dir = new URL('../../testdata/inject/', import.meta.url);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml') && !f.endsWith('.settings.yaml'))) {
    const settings = { ...goldenSettings, gracePeriodCapSeconds: 60 };
    for (const warning of injectPod(parse(readFileSync(new URL(file, dir), 'utf8')), settings).warnings) {
      assert.ok(warning.length <= 120, `${file}: ${warning.length} characters: ${warning}`);
    }
  }
});
