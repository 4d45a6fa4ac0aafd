import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { annotations } from '../../../src/annotations.ts';
import { HOOK_CONTAINER_NAME, HOOK_METRICS_PORT_NAME, injectPod } from '../../../src/injector/index.ts';
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

describe('what an administrator sets wins over what a pod asks', () => {
  const container = { name: 'operator', image: 'i' };
  const podWith = (podAnnotations: Record<string, string>, spec: Record<string, unknown> = {}) => ({
    metadata: { name: 'p', annotations: podAnnotations },
    spec: { containers: [container], ...spec },
  });
  const capped = { ...goldenSettings, gracePeriodCapSeconds: 60 };
  const hookOf = (pod: V1Pod) => pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME);

  test('the grace-period cap wins over an annotation above it, with a warning', () => {
    const result = injectPod(podWith({ [annotations.gracePeriod]: '600' }, { terminationGracePeriodSeconds: 600 }), capped);
    assert.equal(result.pod.spec?.terminationGracePeriodSeconds, 60);
    assert.deepEqual(result.warnings, [
      'leaderhook: annotated grace period 600s is above the 60s cap; capped to it',
      'leaderhook: terminationGracePeriodSeconds 600s -> 60s (cap: a stuck operator must not delay failover)',
    ]);
  });

  test('an annotation above the cap on a pod already at the cap changes nothing, and still says why', () => {
    const result = injectPod(podWith({ [annotations.gracePeriod]: '90' }, { terminationGracePeriodSeconds: 60 }), capped);
    assert.equal(result.pod.spec?.terminationGracePeriodSeconds, 60);
    assert.deepEqual(result.warnings, ['leaderhook: annotated grace period 90s is above the 60s cap; capped to it']);
  });

  test('within the cap the annotation still sets the grace period, up or down', () => {
    const up = injectPod(podWith({ [annotations.gracePeriod]: '45' }, { terminationGracePeriodSeconds: 20 }), capped);
    assert.equal(up.pod.spec?.terminationGracePeriodSeconds, 45);
    assert.deepEqual(up.warnings, ['leaderhook: terminationGracePeriodSeconds 20s -> 45s (as annotated)']);
    const atCap = injectPod(podWith({ [annotations.gracePeriod]: '60' }), capped);
    assert.equal(atCap.pod.spec?.terminationGracePeriodSeconds, 60);
    assert.deepEqual(atCap.warnings, ['leaderhook: terminationGracePeriodSeconds 30s -> 60s (as annotated)']);
  });

  test('the annotation still wins over the floor: a shorter grace period only leaves more to GC', () => {
    const result = injectPod(podWith({ [annotations.gracePeriod]: '3' }), capped);
    assert.equal(result.pod.spec?.terminationGracePeriodSeconds, 3);
    assert.deepEqual(result.warnings, [
      'leaderhook: annotated grace period 3s is below the 10s floor; the lock may wait for GC',
      'leaderhook: terminationGracePeriodSeconds 30s -> 3s (as annotated)',
    ]);
  });

  test('without a cap the annotation sets any grace period', () => {
    const result = injectPod(podWith({ [annotations.gracePeriod]: '600' }), goldenSettings);
    assert.equal(result.pod.spec?.terminationGracePeriodSeconds, 600);
  });

  test("the webhook's observe mode stays on for a pod that asks for it off, and the pod is told", () => {
    const observing = { ...goldenSettings, observe: true };
    for (const value of ['false', 'no', '0', 'off', '']) {
      const result = injectPod(podWith({ [annotations.observe]: value }), observing);
      assert.deepEqual(
        hookOf(result.pod)?.env?.find((e) => e.name === 'LEADERHOOK_OBSERVE'),
        { name: 'LEADERHOOK_OBSERVE', value: 'true' },
        value,
      );
      assert.deepEqual(result.warnings, [
        `leaderhook: ignoring ${annotations.observe}: "${value}": observe mode is set for all pods; a pod cannot turn it off`,
      ]);
    }
  });

  test('a pod may turn observe mode on, and says nothing the injector must answer', () => {
    for (const value of ['true', 'YES', ' 1 ']) {
      assert.deepEqual(injectPod(podWith({ [annotations.observe]: value }), { ...goldenSettings, observe: true }).warnings, [], value);
      assert.deepEqual(injectPod(podWith({ [annotations.observe]: value }), goldenSettings).warnings, [], value);
    }
    assert.deepEqual(injectPod(podWith({ [annotations.observe]: 'false' }), goldenSettings).warnings, [], 'off where the webhook is not observing: as asked');
  });

  test("opting out stays the pod author's, whatever the webhook settings", () => {
    const result = injectPod(podWith({ [annotations.inject]: 'false' }), { ...capped, observe: true });
    assert.equal(result.reason, 'optedOut');
    assert.deepEqual(result.patch, []);
  });
});

describe('hook metrics by annotation', () => {
  const key = annotations.hookMetricsPort;
  const hookOf = (pod: V1Pod) => pod.spec?.initContainers?.find((c) => c.name === HOOK_CONTAINER_NAME);
  const metricsEnv = (pod: V1Pod) => hookOf(pod)?.env?.find((e) => e.name === 'LEADERHOOK_METRICS_PORT');

  test('a port number sets LEADERHOOK_METRICS_PORT and a named containerPort on the hook', () => {
    const pod = { metadata: { annotations: { [key]: '9464' } }, spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 8080 }] }] } };
    const result = injectPod(pod, goldenSettings);
    assert.deepEqual(result.warnings, []);
    assert.deepEqual(metricsEnv(result.pod), { name: 'LEADERHOOK_METRICS_PORT', value: '9464' });
    assert.deepEqual(hookOf(result.pod)?.ports, [{ name: HOOK_METRICS_PORT_NAME, containerPort: 9464, protocol: 'TCP' }]);
  });

  test('without the annotation the hook has no port and no metrics', () => {
    const result = injectPod({ spec: { containers: [{ name: 'c', image: 'i' }] } }, goldenSettings);
    assert.equal(metricsEnv(result.pod), undefined);
    assert.equal(hookOf(result.pod)?.ports, undefined);
  });

  test('a value that is not a port number is ignored with a warning, and the pod is still injected', () => {
    for (const value of ['0', '65536', '-1', ' 9090', '9090 ', '1e3', '0x50', 'http', '']) {
      const result = injectPod({ metadata: { annotations: { [key]: value } }, spec: { containers: [{ name: 'c', image: 'i' }] } }, goldenSettings);
      assert.equal(result.reason, 'injected', value);
      assert.equal(metricsEnv(result.pod), undefined, value);
      assert.equal(hookOf(result.pod)?.ports, undefined, value);
      assert.deepEqual(result.warnings, [`leaderhook: ignoring ${key}: "${value}" is not a port number (1-65535)`], value);
    }
    for (const value of ['1', '65535', '08080']) {
      const result = injectPod({ metadata: { annotations: { [key]: value } }, spec: { containers: [{ name: 'c', image: 'i' }] } }, goldenSettings);
      assert.equal(metricsEnv(result.pod)?.value, String(Number(value)), value);
    }
  });

  test("a port another container declares, main or init, is ignored with a warning: the hook must not take the operator's port", () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        {
          containers: [
            { name: 'a', image: 'i' },
            { name: 'b', image: 'i', ports: [{ containerPort: 9464, protocol: 'UDP' }] },
          ],
        },
        'container "b" already uses port 9464',
      ],
      [
        { containers: [{ name: 'a', image: 'i' }], initContainers: [{ name: 'proxy', image: 'i', restartPolicy: 'Always', ports: [{ containerPort: 9464 }] }] },
        'container "proxy" already uses port 9464',
      ],
      [
        { containers: [{ name: 'a', image: 'i', ports: [{ name: HOOK_METRICS_PORT_NAME, containerPort: 1234 }] }] },
        `container "a" already has a port named ${HOOK_METRICS_PORT_NAME}`,
      ],
    ];
    for (const [spec, why] of cases) {
      const result = injectPod({ metadata: { annotations: { [key]: '9464' } }, spec }, goldenSettings);
      assert.equal(result.reason, 'injected', why);
      assert.equal(metricsEnv(result.pod), undefined, why);
      assert.equal(hookOf(result.pod)?.ports, undefined, why);
      assert.deepEqual(result.warnings, [`leaderhook: ignoring ${key}: ${why}`]);
    }
  });

  test('a port below 1024 is set, with a warning that the hook may not get it', () => {
    const result = injectPod({ metadata: { annotations: { [key]: '80' } }, spec: { containers: [{ name: 'c', image: 'i' }] } }, goldenSettings);
    assert.equal(metricsEnv(result.pod)?.value, '80');
    assert.deepEqual(result.warnings, ['leaderhook: hook metrics port 80 is below 1024: the hook runs without root or capabilities and may not get it']);
  });

  test('ports on a hook container someone else left are dropped: the hook serves metrics only where the annotation asks', () => {
    const hook = { name: HOOK_CONTAINER_NAME, image: 'old', ports: [{ containerPort: 8080 }] };
    const result = injectPod({ spec: { initContainers: [hook], containers: [{ name: 'c', image: 'i' }] } }, goldenSettings);
    assert.equal(hookOf(result.pod)?.ports, undefined);
  });

  test('a reinvocation after the API server defaulted the port keeps it, and finds nothing to do', () => {
    const first = injectPod({ metadata: { annotations: { [key]: '9464' } }, spec: { containers: [{ name: 'c', image: 'i' }] } }, goldenSettings);
    const again = injectPod(first.pod, goldenSettings);
    assert.deepEqual(again.patch, []);
    assert.deepEqual(again.warnings, [], "the hook's own port is not another container's");
  });

  test('ports of the wrong type in a hand-made review are read as none, never thrown on', () => {
    const spec = {
      containers: [
        { name: 'c', image: 'i', ports: 'x' },
        { name: 'd', image: 'i', ports: [null, 7, { containerPort: '9464' }] },
      ],
    };
    const result = injectPod({ metadata: { annotations: { [key]: '9464' } }, spec }, goldenSettings);
    assert.equal(result.reason, 'injected');
    assert.equal(metricsEnv(result.pod)?.value, '9464');
  });
});
