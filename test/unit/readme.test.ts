import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderReference } from '../../scripts/reference-flags.ts';

test('docs/reference.md flag tables match the flags the CLI parses (node scripts/reference-flags.ts rewrites them)', () => {
  const reference = readFileSync(new URL('../../docs/reference.md', import.meta.url), 'utf8');
  assert.equal(renderReference(reference), reference);
});

test('README opens with the run and test commands', () => {
  const head = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    .split('\n')
    .slice(0, 8)
    .join('\n');
  assert.match(head, /```sh\nnpm ci && npm run demo[^\n]*\nnpm ci && npm test/);
});
