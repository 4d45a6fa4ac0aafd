import assert from 'node:assert/strict';
import { test } from 'node:test';
import { annotations } from '../../../src/annotations.ts';
import { injectPod } from '../../../src/injector/index.ts';
import { workloadWarnings } from '../../../src/injector/workloads.ts';
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

test('a pod with a field of the wrong type where the injector reads is skipped, naming the field, not thrown on', () => {
  const trap = { toString: 'not a function' };
  const container = { name: 'c', image: 'i' };
  const cases: Array<[unknown, string]> = [
    [{ metadata: 'm', spec: { containers: [container] } }, 'metadata is not an object'],
    [{ metadata: { annotations: ['a'] }, spec: { containers: [container] } }, 'metadata.annotations is not an object'],
    [
      { metadata: { annotations: { [annotations.gracePeriod]: trap } }, spec: { containers: [container] } },
      `metadata.annotations["${annotations.gracePeriod}"] is not a string`,
    ],
    [{ spec: { containers: [null] } }, 'spec.containers[0] is not an object'],
    [{ spec: { containers: [container, { name: trap }] } }, 'spec.containers[1].name is not a string'],
    [{ spec: { containers: [{ ...container, env: 'POD_NAME' }] } }, 'spec.containers[0].env is not a list'],
    [{ spec: { containers: [{ ...container, env: [{ name: 'A' }, 7] }] } }, 'spec.containers[0].env[1] is not an object'],
    [{ spec: { containers: [{ ...container, envFrom: {} }] } }, 'spec.containers[0].envFrom is not a list'],
    [{ spec: { containers: [container], initContainers: 5 } }, 'spec.initContainers is not a list'],
    [{ spec: { containers: [container], initContainers: [[]] } }, 'spec.initContainers[0] is not an object'],
    [{ spec: { containers: [container], volumes: {} } }, 'spec.volumes is not a list'],
    [{ spec: { containers: [container], volumes: [{ name: 1 }] } }, 'spec.volumes[0].name is not a string'],
    [{ spec: { containers: [container], terminationGracePeriodSeconds: '30' } }, 'spec.terminationGracePeriodSeconds is not a whole number'],
    [{ spec: { containers: [container], terminationGracePeriodSeconds: 1.5 } }, 'spec.terminationGracePeriodSeconds is not a whole number'],
  ];
  for (const [pod, problem] of cases) {
    const result = injectPod(pod, goldenSettings);
    assert.equal(result.reason, 'notAPod', problem);
    assert.equal(result.message, `${problem}, so it is not a Pod leaderhook can inject`);
    assert.deepEqual(result.patch, []);
  }
});

test('null stands for absent where the injector reads it', () => {
  const pod = {
    metadata: { annotations: null },
    spec: { containers: [{ name: null, image: 'i', env: null, envFrom: null }], initContainers: null, volumes: null, terminationGracePeriodSeconds: null },
  };
  assert.equal(injectPod(pod, goldenSettings).reason, 'injected');
});

test('a workload whose pod template has a field of the wrong type gets no warnings, and the reason names the field', () => {
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', spec: { template: { spec: { containers: [{ name: 'c', env: [null] }] } } } };
  const result = workloadWarnings(deployment, goldenSettings);
  assert.equal(result.reason, 'noPodTemplate');
  assert.equal(result.message, "the Deployment's spec.template.spec.containers[0].env[0] is not an object");
  assert.deepEqual(result.warnings, []);
});
