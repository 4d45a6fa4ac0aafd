/**
 * Golden tests of the workload warnings. Every test/testdata/workloads/NAME.yaml
 * is a case (a workload manifest, or something that is not one);
 * NAME.warnings.yaml beside it holds the expected reason, message and
 * warnings; an optional NAME.settings.yaml overrides settings, as for the pod
 * goldens. REFRESH_GOLDEN=1 rewrites the goldens.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { WORKLOAD_KINDS, workloadWarnings } from '../../../src/injector/workloads.ts';
import { settingsFor } from '../../support/injection-settings.ts';

const dir = path.join(import.meta.dirname, '../../testdata/workloads');
const refresh = process.env.REFRESH_GOLDEN === '1';
const GOLDEN_SUFFIX = '.warnings.yaml';
const SETTINGS_SUFFIX = '.settings.yaml';
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml') && !f.endsWith(GOLDEN_SUFFIX) && !f.endsWith(SETTINGS_SUFFIX))
  .map((f) => f.slice(0, -'.yaml'.length))
  .sort();

function readYaml(file: string): unknown {
  return parse(readFileSync(path.join(dir, file), 'utf8'));
}

describe('workload warning golden files', () => {
  test('there are cases', () => assert.ok(cases.length >= 9, `only ${cases.length} cases in ${dir}`));

  test('every workload kind has a case', () => {
    const covered = new Set(cases.map((name) => (readYaml(`${name}.yaml`) as { kind?: unknown }).kind));
    const missing = WORKLOAD_KINDS.map((w) => w.kind).filter((kind) => !covered.has(kind));
    assert.deepEqual(missing, [], 'workload kinds without a golden case');
  });

  test('no golden or settings file without its input', () => {
    const stale = readdirSync(dir)
      .filter((f) => f.endsWith(GOLDEN_SUFFIX) || f.endsWith(SETTINGS_SUFFIX))
      .filter((f) => !cases.includes(f.slice(0, -(f.endsWith(GOLDEN_SUFFIX) ? GOLDEN_SUFFIX : SETTINGS_SUFFIX).length)));
    assert.deepEqual(stale, [], 'stale golden files: delete them or restore their inputs');
  });

  for (const name of cases) {
    test(name, () => {
      const input = readYaml(`${name}.yaml`);
      const submitted = structuredClone(input);
      const result = workloadWarnings(submitted, settingsFor(name, dir));
      assert.deepEqual(submitted, input, 'the workload is only read, never changed');
      for (const warning of result.warnings) {
        assert.ok(warning.length <= 120, `${warning.length} characters, more than the 120 the API server advises: ${warning}`);
      }

      const goldenFile = path.join(dir, `${name}${GOLDEN_SUFFIX}`);
      if (refresh) {
        writeFileSync(goldenFile, stringify(result, { lineWidth: 0 }));
      }
      assert.ok(existsSync(goldenFile), `missing golden ${goldenFile}: run with REFRESH_GOLDEN=1`);
      assert.deepEqual(result, readYaml(`${name}${GOLDEN_SUFFIX}`), `output differs from ${goldenFile} (REFRESH_GOLDEN=1 rewrites it)`);
    });
  }
});
