/**
 * parseReviewJson is JSON.parse without the managedFields members: checked
 * against exactly that (JSON.parse, then every array-valued managedFields key
 * deleted) on the review samples, on hand-written traps for a byte scanner
 * (strings that look like the key, escapes, nesting, commas, whitespace) and
 * on generated documents; and a body that is not JSON fails with JSON.parse's
 * own error.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseReviewJson } from '../../../src/webhook/review-json.ts';
import { largePodReview } from '../../bench/webhook-pods.ts';

/** What parseReviewJson must return: the full parse, without any managedFields member whose value is an array. */
function expected(text: string): unknown {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key, v]) => !(key === 'managedFields' && Array.isArray(v)))
        .map(([key, v]) => [key, strip(v)]),
    );
  };
  return strip(JSON.parse(text));
}

function parse(text: string): unknown {
  return parseReviewJson(Buffer.from(text, 'utf8'));
}

function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    return (error as Error).message;
  }
  return 'no error';
}

const managedFields = [
  {
    manager: 'kubectl',
    operation: 'Update',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } }, 'k:{"name":"c"}': {} },
  },
];

describe('parseReviewJson', () => {
  it('parses the AdmissionReview samples as JSON.parse does', () => {
    const dir = new URL('../../testdata/admission/', import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    assert.ok(files.length >= 4);
    for (const file of files) {
      const text = readFileSync(new URL(file, dir), 'utf8');
      assert.deepEqual(parse(text), expected(text), file);
    }
  });

  it('leaves out the managedFields of the large benchmark pod, compact and indented', () => {
    const text = largePodReview().toString('utf8');
    const parsed = parse(text) as { request: { object: { metadata: Record<string, unknown> } } };
    assert.equal('managedFields' in parsed.request.object.metadata, false);
    assert.deepEqual(parsed, expected(text));
    const indented = JSON.stringify(JSON.parse(text), null, 2);
    assert.deepEqual(parse(indented), expected(indented));
  });

  it('cuts only real members, wherever they sit, and keeps everything that merely looks like one', () => {
    const traps: unknown[] = [
      { metadata: { managedFields } },
      { metadata: { name: 'p', managedFields } },
      { metadata: { managedFields, name: 'p' } },
      { metadata: { a: 1, managedFields, b: [1, { managedFields }], c: null } },
      { metadata: { annotations: { note: '"managedFields": [1, 2]', other: '\\"managedFields\\": [' }, managedFields } },
      { metadata: { annotations: { 'x"managedFields"': 'y', back: '\\', quote: '"', both: '\\"' }, managedFields } },
      { metadata: { managedFields: null, name: 'null is no array' } },
      { metadata: { managedFields: 'a string', name: 'neither' } },
      { list: ['managedFields', { value: 'managedFields' }], managedFields: [] },
      { managedFieldsX: [1], XmanagedFields: [2], managedFields: [3] },
      { metadata: { managedFields: [{ nested: { managedFields: [[[]]] }, text: ']}]}' }] } },
      { unicode: 'Grüße, 世界, 🙂', managedFields: [{ 'f:ä': {} }], after: 'ü' },
      { a: true, managedFields: [], b: false },
      { a: false, managedFields: [] },
      { a: 12.5e3, managedFields: [] },
      { a: null, managedFields: [], b: [] },
      { a: { managedFields: [] }, managedFields: [], z: { managedFields: [] } },
    ];
    for (const trap of traps) {
      for (const text of [JSON.stringify(trap), JSON.stringify(trap, null, 2), JSON.stringify(trap, null, '\t').replaceAll('\n', '\r\n')]) {
        assert.deepEqual(parse(text), expected(text), text);
      }
    }
  });

  it('agrees with JSON.parse on generated documents', () => {
    // A small deterministic generator (xorshift): objects and arrays with
    // managedFields members here and there, strings full of the characters a
    // byte scanner could trip on.
    let seed = 0x2545f491;
    const random = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 0x100000000;
    };
    const pieces = ['"', '\\', '[', ']', '{', '}', ',', ':', 'managedFields', '"managedFields"', ' ', 'a', 'é', '\n'];
    const text = () => Array.from({ length: Math.floor(random() * 6) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.3) return [text(), 1, null, true, false, -0.5][Math.floor(random() * 6)];
      if (r < 0.5) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      const object: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 5); i > 0; i--) {
        const key = random() < 0.3 ? 'managedFields' : text();
        object[key] = key === 'managedFields' && random() < 0.8 ? [value(depth + 1)] : value(depth + 1);
      }
      return object;
    };
    for (let n = 0; n < 2000; n++) {
      const document = { request: { object: value(0) } };
      const textDocument = random() < 0.5 ? JSON.stringify(document) : JSON.stringify(document, null, 1);
      assert.deepEqual(parse(textDocument), expected(textDocument), textDocument);
    }
  });

  it("fails on a body that is not JSON with JSON.parse's own message", () => {
    for (const text of [
      '{"metadata": {"managedFields": [],}}',
      '{"metadata": {, "managedFields": []}}',
      '{"metadata": {"a": 1 "managedFields": []}}',
      '{"metadata": {"a": , "managedFields": []}}',
      '{"metadata": {"a" , "managedFields": []}}',
      '["managedFields": []]',
      '{"metadata": {"managedFields": [{"a": 1}',
      '{"metadata": {"managedFields": []}',
      '{"managedFields": [] "next": 1}',
      '',
      'not json',
    ]) {
      assert.throws(() => parse(text), SyntaxError, text);
      assert.equal(
        errorOf(() => parse(text)),
        errorOf(() => JSON.parse(text)),
        text,
      );
    }
  });

  it('skips a UTF-8 byte order mark, as body-parser does', () => {
    const text = JSON.stringify({ metadata: { managedFields, name: 'p' } });
    assert.deepEqual(parseReviewJson(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])), expected(text));
  });

  it('does not check the grammar inside the skipped array (the API server never sends a broken one)', () => {
    assert.deepEqual(parse('{"metadata": {"managedFields": [1 2 {"a"}], "name": "p"}}'), { metadata: { name: 'p' } });
  });
});
