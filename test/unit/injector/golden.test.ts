/**
 * Golden tests of the injector. Every test/testdata/inject/NAME.yaml is a case
 * (a Pod manifest); NAME.yaml.injected beside it holds the expected reason,
 * warnings and resulting pod; an optional NAME.settings.yaml overrides
 * settings. Each case applies the returned JSON Patch to the input with a JSON
 * Patch library, compares with the golden, and injects the result again to
 * prove idempotency. REFRESH_GOLDEN=1 rewrites the goldens.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import fastJsonPatch from 'fast-json-patch';
import { parse, stringify } from 'yaml';
import { injectPod } from '../../../src/injector/index.ts';
import { settingsFor } from '../../support/injection-settings.ts';

const dir = path.join(import.meta.dirname, '../../testdata/inject');
const refresh = process.env.REFRESH_GOLDEN === '1';
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml') && !f.endsWith('.settings.yaml'))
  .map((f) => f.slice(0, -'.yaml'.length))
  .sort();

describe('injector golden files', () => {
  test('there are cases', () => assert.ok(cases.length >= 15, `only ${cases.length} cases in ${dir}`));

  test('no golden file without its input', () => {
    const stale = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml.injected'))
      .filter((f) => !cases.includes(f.slice(0, -'.yaml.injected'.length)));
    assert.deepEqual(stale, [], 'stale golden files: delete them or restore their inputs');
  });

  for (const name of cases) {
    test(name, () => {
      const input = parse(readFileSync(path.join(dir, `${name}.yaml`), 'utf8'));
      const settings = settingsFor(name);
      const result = injectPod(structuredClone(input), settings);

      const errors = fastJsonPatch.validate(result.patch, structuredClone(input));
      assert.equal(errors, undefined, `patch does not validate against the input: ${errors?.message}`);
      const patched = fastJsonPatch.applyPatch(structuredClone(input), result.patch, true, false).newDocument;
      assert.deepEqual(patched, result.pod, 'applying the patch to the input must give the pod the injector describes');

      const actual = { reason: result.reason, warnings: result.warnings, pod: patched };
      const goldenFile = path.join(dir, `${name}.yaml.injected`);
      if (refresh) {
        writeFileSync(goldenFile, stringify(actual, { lineWidth: 0 }));
      }
      assert.ok(existsSync(goldenFile), `missing golden ${goldenFile}: run with REFRESH_GOLDEN=1`);
      assert.deepEqual(actual, parse(readFileSync(goldenFile, 'utf8')), `output differs from ${goldenFile} (REFRESH_GOLDEN=1 rewrites it)`);

      const again = injectPod(structuredClone(patched), settings);
      assert.deepEqual(again.patch, [], 'injecting the output again must change nothing');
      if (result.patch.length > 0) assert.equal(again.reason, 'alreadyInjected');
    });
  }
});
