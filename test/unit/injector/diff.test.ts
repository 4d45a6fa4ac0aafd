/**
 * The injector's JSON diff: its patch, applied with fast-json-patch (the
 * library the tests trust), turns the first value into the second, on
 * hand-picked cases and on generated pairs; shared subtrees produce nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { diff } from '../../../src/injector/diff.ts';

function patchOf(before: unknown, after: unknown, path = ''): Operation[] {
  const patch: Operation[] = [];
  diff(before, after, path, patch);
  return patch;
}

function applies(before: unknown, after: unknown): void {
  const patch = patchOf(before, after);
  const result = fastJsonPatch.applyPatch(
    structuredClone({ root: before }),
    patch.map((op) => ({ ...op, path: `/root${op.path}` })),
    true,
    false,
  ).newDocument;
  assert.deepEqual(result.root, after, `${JSON.stringify(before)} -> ${JSON.stringify(after)} via ${JSON.stringify(patch)}`);
}

describe('injector diff', () => {
  it('turns one value into the other', () => {
    const cases: Array<[unknown, unknown]> = [
      [{}, { a: 1 }],
      [{ a: 1 }, {}],
      [{ a: 1 }, { a: 2 }],
      [{ a: [1, 2, 3] }, { a: [1] }],
      [{ a: [1] }, { a: [1, 2, 3] }],
      [{ a: [1, 2, 3] }, { a: [3, 2] }],
      [{ a: { b: 1 } }, { a: [1] }],
      [{ a: [1] }, { a: { 0: 1 } }],
      [{ a: null }, { a: { b: null } }],
      [
        { 'leaderhook.io/injected': 'x', 'a~b': 1 },
        { 'leaderhook.io/injected': 'y', 'a~b': 2, 'c/d~e': 3 },
      ],
      [
        [{ name: 'a' }, { name: 'b' }],
        [{ name: 'b' }, { name: 'a', env: [] }, { name: 'c' }],
      ],
      [
        { a: 1, b: 2, c: 3 },
        { c: 3, a: 1 },
      ],
    ];
    for (const [before, after] of cases) applies(before, after);
  });

  it('escapes / and ~ in keys', () => {
    assert.deepEqual(patchOf({}, { 'leaderhook.io/injected': '0.1.0', 'a~b': 1 }, '/metadata/annotations'), [
      { op: 'add', path: '/metadata/annotations/leaderhook.io~1injected', value: '0.1.0' },
      { op: 'add', path: '/metadata/annotations/a~0b', value: 1 },
    ]);
  });

  it('skips what is shared by reference, and adds at the end of a grown list', () => {
    const shared = { big: Array.from({ length: 1000 }, (_, i) => ({ i })) };
    const env = [{ name: 'A' }];
    assert.deepEqual(patchOf({ shared, env }, { shared, env: [...env, { name: 'POD_NAME' }] }), [{ op: 'add', path: '/env/1', value: { name: 'POD_NAME' } }]);
    assert.deepEqual(patchOf(shared, shared), []);
  });

  it('agrees with fast-json-patch on generated pairs', () => {
    let seed = 0x1b873593;
    const random = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 0x100000000;
    };
    const keys = ['a', 'b', 'c/d', 'e~f', '0'];
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.35) return [1, 'x', null, true, 2.5][Math.floor(random() * 5)];
      if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      return Object.fromEntries(keys.filter(() => random() < 0.5).map((k) => [k, value(depth + 1)]));
    };
    const mutate = (v: unknown): unknown => {
      if (random() < 0.2) return value(2);
      if (Array.isArray(v)) return random() < 0.3 ? [...v.map(mutate), value(2)] : v.filter(() => random() < 0.8).map(mutate);
      if (typeof v === 'object' && v !== null) {
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) if (random() < 0.85) out[k] = random() < 0.5 ? x : mutate(x);
        if (random() < 0.3) out[keys[Math.floor(random() * keys.length)]!] = value(2);
        return out;
      }
      return v;
    };
    for (let n = 0; n < 3000; n++) {
      const before = { root: value(0) };
      applies(before, mutate(before));
    }
  });
});
