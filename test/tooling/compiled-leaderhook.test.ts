/**
 * bench:webhook --heap-after-gc reads `node --trace-gc` lines (as Node 24's V8
 * prints them) for the heap each major collection left.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { heapAfterMarkCompact } from '../support/compiled-leaderhook.ts';

test('the heap after a major collection comes from Mark-Compact lines, with or without (reduce); nothing else gives one', () => {
  assert.equal(
    heapAfterMarkCompact(
      '[10906:0x44442000]     4360 ms: Mark-Compact 20.3 (21.6) -> 18.2 (22.6) MB, pooled: 0 MB, 2.82 / 0.03 ms  (+ 12.6 ms in 52 steps since start of marking)',
    ),
    18.2,
  );
  assert.equal(heapAfterMarkCompact('[10906:0x44442000]   105801 ms: Mark-Compact (reduce) 22.2 (25.1) -> 19.7 (23.6) MB, pooled: 0 MB, 3.10 / 0.01 ms'), 19.7);
  for (const other of [
    '[10906:0x44442000]      173 ms: Scavenge 8.9 (10.1) -> 8.3 (11.1) MB, pooled: 0 MB, 5.58 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; ',
    '{"level":"warn","msg":"Mark-Compact 1 (2) -> 3 (4) MB"}',
    '',
  ])
    assert.equal(heapAfterMarkCompact(other), undefined, other);
});
