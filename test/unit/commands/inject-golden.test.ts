/**
 * Golden tests of `leaderhook inject`, the cases of test/testdata/inject-cli
 * (test/support/inject-cli-goldens.ts). Settings come from the same flag
 * specs as the webhook's, with the version pinned so a release does not
 * rewrite every golden. Each case also proves that the output parses to
 * what the injector makes, and that injecting it again changes nothing.
 * REFRESH_GOLDEN=1 rewrites the goldens.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { injectFlags } from '../../../src/commands/flags.ts';
import { injectOutcome } from '../../../src/commands/inject.ts';
import { injectionSettingsFromFlags } from '../../../src/commands/injection-settings.ts';
import { parseFlags } from '../../../src/flags.ts';
import { injectPod } from '../../../src/injector/index.ts';
import { WORKLOAD_KINDS } from '../../../src/injector/workloads.ts';
import { FLAGS, injectCliCases, injectCliDir, injectCliFlags, STDERR, STDOUT } from '../../support/inject-cli-goldens.ts';
import { goldenSettings } from '../../support/injection-settings.ts';

const dir = injectCliDir;
const cases = injectCliCases;
const refresh = process.env.REFRESH_GOLDEN === '1';

function settingsFor(name: string) {
  return { ...injectionSettingsFromFlags(parseFlags(injectFlags, injectCliFlags(name), {}).values), version: goldenSettings.version };
}

function documents(text: string): unknown[] {
  return parseAllDocuments(text as string)
    .map((d) => d.toJS())
    .filter((d) => d !== null);
}

function golden(file: string, actual: string): string {
  const full = path.join(dir, file);
  if (refresh) writeFileSync(full, actual);
  assert.ok(existsSync(full), `missing golden ${full}: run with REFRESH_GOLDEN=1`);
  return readFileSync(full, 'utf8');
}

describe('leaderhook inject golden files', () => {
  test('there are cases, good and bad, and every workload kind is among them', () => {
    assert.ok(cases.length >= 10, `only ${cases.length} cases in ${dir}`);
    assert.ok(cases.some((c) => c.startsWith('bad-')));
    type Object = { kind?: string; items?: Object[] };
    const kindsOf = (o: Object): (string | undefined)[] => [o.kind, ...(o.kind === 'List' ? (o.items ?? []).flatMap(kindsOf) : [])];
    const good = cases.filter((c) => !c.startsWith('bad-'));
    const kinds = new Set(good.flatMap((c) => documents(readFileSync(path.join(dir, `${c}.yaml`), 'utf8')).flatMap((d) => kindsOf(d as Object))));
    const missing = WORKLOAD_KINDS.map((k) => k.kind).filter((k) => !kinds.has(k));
    assert.deepEqual(missing, []);
  });

  test('no golden or flags file without its input', () => {
    const stale = readdirSync(dir)
      .filter((f) => f.endsWith(STDOUT) || f.endsWith(STDERR) || f.endsWith(FLAGS))
      .filter((f) => !cases.includes(f.slice(0, -[STDOUT, STDERR, FLAGS].find((s) => f.endsWith(s))!.length)));
    assert.deepEqual(stale, [], 'stale golden files: delete them or restore their inputs');
  });

  for (const name of cases) {
    test(name, () => {
      const input = readFileSync(path.join(dir, `${name}.yaml`), 'utf8');
      const settings = settingsFor(name);
      const outcome = injectOutcome(input, `${name}.yaml`, settings);
      assert.equal(outcome.stdout, golden(`${name}${STDOUT}`, outcome.stdout), `stdout differs from ${name}${STDOUT} (REFRESH_GOLDEN=1 rewrites it)`);
      assert.equal(outcome.stderr, golden(`${name}${STDERR}`, outcome.stderr), `stderr differs from ${name}${STDERR} (REFRESH_GOLDEN=1 rewrites it)`);

      if (name.startsWith('bad-')) {
        assert.equal(outcome.exitCode, 1);
        assert.equal(outcome.stdout, '', 'bad input writes nothing to stdout');
        assert.match(outcome.stderr, /^leaderhook inject: [^:]+: document \d+/, 'the error names the document');
        return;
      }
      assert.equal(outcome.exitCode, 0, outcome.stderr);
      const before = documents(input);
      const after = documents(outcome.stdout);
      assert.equal(after.length, before.length, 'every document is written, in order');
      for (const [i, object] of after.entries()) {
        const original = before[i] as { kind?: string; metadata?: unknown };
        assert.deepEqual((object as typeof original).kind, original.kind, `document ${i + 1} keeps its kind`);
        if (original.kind === 'Pod') assert.deepEqual(object, injectPod(structuredClone(original), settings).pod, `document ${i + 1} is the injected pod`);
      }
      const again = injectOutcome(outcome.stdout, `${name}${STDOUT}`, settings);
      assert.equal(again.stdout, outcome.stdout, 'injecting the output again changes nothing');
    });
  }
});
