/**
 * The QoS question the injector asks (src/injector/qos.ts) and the quantity
 * arithmetic under it (src/injector/quantity.ts), against the API server's
 * rules: a request equal to its limit however each is written, a limit alone
 * standing for both, and every container counted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { hasGuaranteedResources, isGuaranteed } from '../../../src/injector/qos.ts';
import { positiveQuantity, quantityValue, sameQuantity } from '../../../src/injector/quantity.ts';

test('the same amount written differently is the same quantity', () => {
  for (const [a, b] of [
    ['1', '1000m'],
    ['0.5', '500m'],
    ['128Mi', '134217728'],
    ['1Gi', '1024Mi'],
    ['1.5Gi', '1536Mi'],
    ['1k', '1e3'],
    ['2M', '2000k'],
    ['100m', '0.1'],
  ]) {
    assert.ok(sameQuantity(a!, b!), `${a} = ${b}`);
    assert.ok(sameQuantity(b!, a!), `${b} = ${a}`);
  }
});

test('different amounts, and what is not a quantity, are not the same', () => {
  for (const [a, b] of [
    ['1', '999m'],
    ['128Mi', '128M'],
    ['1Ki', '1k'],
    ['lots', 'lots'],
    ['', '0'],
    ['-1', '-1'],
  ]) {
    assert.ok(!sameQuantity(a!, b!), `${a} ≠ ${b}`);
  }
  assert.ok(positiveQuantity('1m'));
  assert.ok(!positiveQuantity('0'));
  assert.ok(!positiveQuantity('0.0Mi'));
  assert.ok(!positiveQuantity('many'));
});

const container = (resources: V1Container['resources']): V1Container => ({ name: 'c', image: 'i', ...(resources ? { resources } : {}) });

test('a quantity as a number of its unit, and none for what is not a quantity', () => {
  assert.equal(quantityValue('96Mi'), 96 * 2 ** 20);
  assert.equal(quantityValue('100m'), 0.1);
  assert.equal(quantityValue('1.5Gi'), 1.5 * 2 ** 30);
  assert.equal(quantityValue('2e3'), 2000);
  for (const bad of ['', '96 Mi', '-1', 'Mi', '1.Gi']) assert.equal(quantityValue(bad), undefined, bad);
});

test('Guaranteed: both limits set and every request equal to its limit or left out', () => {
  assert.ok(hasGuaranteedResources({ limits: { cpu: '1', memory: '1Gi' } }));
  assert.ok(hasGuaranteedResources({ requests: { cpu: '1000m' }, limits: { cpu: '1', memory: '1Gi' } }));
  assert.ok(!hasGuaranteedResources({ requests: { cpu: '500m' }, limits: { cpu: '1', memory: '1Gi' } }), 'a request below its limit');
  assert.ok(!hasGuaranteedResources({ requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '1Gi' } }), 'no CPU limit');
  assert.ok(!hasGuaranteedResources({ limits: { cpu: '0', memory: '1Gi' } }), 'a zero limit counts as none');
  assert.ok(!hasGuaranteedResources({ requests: { cpu: '1', memory: '1Gi' } }), 'requests alone');
  assert.ok(!hasGuaranteedResources(undefined));
  // YAML gives `cpu: 1` as a number; the API server reads the same quantity
  assert.ok(hasGuaranteedResources({ requests: { cpu: 1 as unknown as string }, limits: { cpu: '1', memory: '64Mi' } }));
});

test('a pod is Guaranteed only if every container is, and a pod of no containers is not', () => {
  const good = container({ limits: { cpu: '1', memory: '1Gi' } });
  assert.ok(isGuaranteed([good, good]));
  assert.ok(!isGuaranteed([good, container({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '1Gi' } })]));
  assert.ok(!isGuaranteed([good, container(undefined)]), 'one container without resources makes it Burstable');
  assert.ok(!isGuaranteed([]));
});
