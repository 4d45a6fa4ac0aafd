/**
 * The injector copies only what it changes (src/injector/index.ts): it never
 * writes into the submitted pod, patches nothing outside the fields it may
 * change, shares what it leaves alone, and still patches a pod that lacks a
 * parent (no metadata at all).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import fastJsonPatch from 'fast-json-patch';
import { parse } from 'yaml';
import { injectPod } from '../../../src/injector/index.ts';
import { goldenSettings, settingsFor } from '../../support/injection-settings.ts';

const dir = new URL('../../testdata/inject/', import.meta.url);
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml') && !f.endsWith('.settings.yaml'))
  .map((f) => f.slice(0, -'.yaml'.length));

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

const TOUCHED = ['/metadata/annotations', '/spec/containers', '/spec/initContainers', '/spec/volumes', '/spec/terminationGracePeriodSeconds'];

test('every golden pod, frozen, is injected without a write into it, and patched only where the injector may change it', () => {
  for (const name of cases) {
    const input = parse(readFileSync(new URL(`${name}.yaml`, dir), 'utf8'));
    const managedFields = [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }];
    const pod = deepFreeze({ ...input, metadata: { ...input.metadata, managedFields } });
    const result = injectPod(pod, settingsFor(name));
    for (const op of result.patch) {
      assert.ok(
        TOUCHED.some((p) => op.path === p || op.path.startsWith(`${p}/`)),
        `${name}: ${op.op} ${op.path}`,
      );
    }
    assert.equal(result.pod.metadata?.managedFields, managedFields, `${name}: managedFields are shared, not copied`);
    if (result.patch.length > 0) assert.equal(result.pod.spec?.securityContext, input.spec.securityContext, `${name}: untouched parts are shared`);
  }
});

test('a pod without metadata gets it added by the patch', () => {
  const pod = { spec: { containers: [{ name: 'c', image: 'i' }] } };
  const result = injectPod(structuredClone(pod), goldenSettings);
  assert.equal(result.reason, 'injected');
  const patched = fastJsonPatch.applyPatch(structuredClone(pod), result.patch, true, false).newDocument as typeof result.pod;
  assert.deepEqual(patched, result.pod);
  assert.equal(patched.metadata?.annotations?.['leaderhook.io/injected'], goldenSettings.version);
});
