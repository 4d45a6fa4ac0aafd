/**
 * The release hook runs in every operator pod, so what it loads is memory
 * every pod pays (docs/performance.md). The tools (`check`, `inject`) and
 * their dependencies must stay off its path, and off the webhook's: this
 * walks the static imports (`import type` costs nothing at run time) from
 * each command's entry module.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

const src = path.join(import.meta.dirname, '../../src');
const IMPORT = /^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?'([^']+)';/gm;

/** Every module (relative to src/) and package that `entry` loads through static imports. */
function staticImports(entry: string): { modules: Set<string>; packages: Set<string> } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    const relative = path.relative(src, file);
    if (modules.has(relative)) return;
    modules.add(relative);
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      if (specifier!.startsWith('.')) visit(path.resolve(path.dirname(file), specifier!));
      else packages.add(specifier!);
    }
  };
  visit(path.join(src, entry));
  return { modules, packages };
}

const TOOL_MODULES = /^(check\/|commands\/check\.ts$|commands\/inject\.ts$|injector\/manifests\.ts$)/;

describe('module isolation', () => {
  it('the walk sees what the tools load, so an empty result below means something', () => {
    const check = staticImports('commands/check.ts');
    assert.ok(check.modules.has('check/run.ts') && check.modules.has('kube/client.ts'));
    assert.ok(check.packages.has('node:child_process'));
    assert.ok(staticImports('commands/inject.ts').packages.has('yaml'));
  });

  for (const entry of ['commands/release.ts', 'commands/webhook.ts', 'cli.ts']) {
    it(`${entry} loads none of the tools' modules, nor yaml or child_process`, () => {
      const { modules, packages } = staticImports(entry);
      assert.deepEqual(
        [...modules].filter((m) => TOOL_MODULES.test(m)),
        [],
      );
      assert.deepEqual(
        [...packages].filter((p) => p === 'yaml' || p === 'node:child_process'),
        [],
      );
    });
  }

  it('the release hook loads no HTTP framework, logger or client library', () => {
    const { packages } = staticImports('commands/release.ts');
    assert.deepEqual(
      [...packages].filter((p) => !p.startsWith('node:')),
      [],
    );
  });
});
