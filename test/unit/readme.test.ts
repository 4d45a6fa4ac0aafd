import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderReadme } from '../../scripts/readme-flags.ts';

test('README flag tables match the flags the CLI parses (node scripts/readme-flags.ts rewrites them)', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  assert.equal(renderReadme(readme), readme);
});

test('README opens with the run and test commands', () => {
  const head = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    .split('\n')
    .slice(0, 8)
    .join('\n');
  assert.match(head, /```sh\nnpm ci && npm run demo[^\n]*\nnpm ci && npm test/);
});
