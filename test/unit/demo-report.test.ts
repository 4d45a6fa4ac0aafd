import assert from 'node:assert/strict';
import { test } from 'node:test';
import { report, sideBySide, timeline } from '../../scripts/demo/report.ts';
import type { Outcome } from '../../scripts/demo/scenario.ts';

const t0 = 1_800_000_000_000;
function outcome(operator: Outcome['operator'], withLeaderhook: boolean, times: { freed: number; gone: number; leader: number }, freedBy: string): Outcome {
  return {
    namespace: withLeaderhook ? 'demo-with' : 'demo-without',
    withLeaderhook,
    operator,
    oldLeader: `${operator}-old`,
    newLeader: `${operator}-new-${withLeaderhook ? 'w' : 'o'}`,
    deleteIssued: t0,
    lockFreedMs: times.freed,
    freedBy,
    oldPodGoneMs: times.gone,
    newLeaderMs: times.leader,
    marks: [
      { label: 'delete issued', at: t0 },
      { label: 'lock freed', at: t0 + times.freed },
    ],
  };
}
const outcomes = [
  outcome('lfl-operator', true, { freed: 600, gone: 1600, leader: 1800 }, 'release hook, rule R1'),
  outcome('lease-operator', true, { freed: 500, gone: 1700, leader: 900 }, 'release hook, rule R1'),
  outcome('lfl-operator', false, { freed: 1700, gone: 1690, leader: 1500 }, 'garbage collector'),
  outcome('lease-operator', false, { freed: 16_100, gone: 3200, leader: 18_000 }, 'Lease ran out'),
];

test('the side-by-side report puts leaderhook beside the baseline, per operator', () => {
  const lines = sideBySide(outcomes).split('\n');
  const lease = lines.findIndex((l) => l.startsWith('lease-operator:'));
  assert.ok(lines[0]?.startsWith('lfl-operator:'));
  assert.match(lines[2] ?? '', /^ {2}lock freed +\+0\.60 s +\+1\.70 s$/);
  assert.match(lines[lease + 5] ?? '', /new leader +\+0\.90 s +\(lease-operator-new-w\) +\+18\.00 s +\(lease-operator-new-o\)/);
  assert.match(lines[lease + 6] ?? '', /new leader 20\.0× sooner with leaderhook \(lock free 15\.60 s earlier\)/);
});

test('where the operator’s own retry decided, the report says so instead of claiming a speed-up', () => {
  assert.match(sideBySide(outcomes), /lock free 1\.10 s earlier with leaderhook, new leader no sooner: operator-lib's standby retries on its own backoff/);
});

test('the timeline merges every failover on one axis from the first delete', () => {
  const lines = timeline(outcomes).split('\n');
  assert.equal(lines.length, 8);
  assert.deepEqual(
    lines.map((l) => l.trim().split(/\s+/)[0]),
    ['+0.00', '+0.00', '+0.00', '+0.00', '+0.50', '+0.60', '+1.70', '+16.10'],
  );
  assert.match(lines.at(-1) ?? '', /lease\/without +lock freed$/);
  assert.ok(report(outcomes).endsWith(`${lines.at(-1)}\n`));
});
