/**
 * The soak's fault schedule: the same seed gives the same faults, every fault
 * before the end and outside its cooldowns, the weights and the mean interval
 * honoured, and a bad input refused before a soak of hours starts on it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLUSTER_TARGET, mulberry32, nodeToDrain, type PlannedFault, parseDurationMs, planSoak, type SoakPlanInput } from '../bench/soak-plan.ts';

const HOUR = 3_600_000;

const input: SoakPlanInput = {
  durationMs: 2 * HOUR,
  meanIntervalMs: 30_000,
  faults: [
    { fault: 'delete-leader', weight: 3 },
    { fault: 'rollout-restart', weight: 1 },
    { fault: 'crash-operator', weight: 1 },
    { fault: 'evict', weight: 1 },
    { fault: 'kill-hook', weight: 1 },
    { fault: 'delete-webhook-replica', weight: 1 },
    { fault: 'restart-apiserver', weight: 1 },
  ],
  targets: [
    { namespace: 'lfl-with', withLeaderhook: true },
    { namespace: 'lease-with', withLeaderhook: true },
    { namespace: 'lfl-without', withLeaderhook: false },
    { namespace: 'lease-without', withLeaderhook: false },
  ],
  seed: 42,
  targetCooldownMs: 120_000,
  clusterCooldownMs: 300_000,
  settleMs: 60_000,
};

/** The least gap between consecutive faults on each target. */
function smallestGaps(plan: readonly PlannedFault[]): Map<string, number> {
  const last = new Map<string, number>();
  const smallest = new Map<string, number>();
  for (const { atMs, target } of plan) {
    const before = last.get(target);
    if (before !== undefined) smallest.set(target, Math.min(smallest.get(target) ?? Number.POSITIVE_INFINITY, atMs - before));
    last.set(target, atMs);
  }
  return smallest;
}

test('the same seed gives the same schedule, another seed another one', () => {
  const plan = planSoak(input);
  assert.ok(plan.length > 50, `a 2 h soak with a fault every 30 s on average has many faults, got ${plan.length}`);
  assert.deepEqual(planSoak({ ...input }), plan);
  assert.notDeepEqual(planSoak({ ...input, seed: 43 }), plan);
});

test('every fault is in time order, at a whole ms, and before the end less the settling time', () => {
  for (const seed of [1, 2, 3]) {
    const plan = planSoak({ ...input, seed });
    assert.deepEqual(
      plan.map((fault) => fault.atMs),
      plan.map((fault) => fault.atMs).sort((a, b) => a - b),
    );
    for (const { atMs } of plan) assert.ok(Number.isInteger(atMs) && atMs >= 0 && atMs < input.durationMs - input.settleMs!, `fault at ${atMs} ms`);
  }
});

test('no two faults on the same target within its cooldown, and no two cluster-wide faults within theirs', () => {
  const plan = planSoak(input);
  const gaps = smallestGaps(plan);
  for (const target of input.targets) assert.ok(gaps.get(target.namespace)! >= input.targetCooldownMs, `${target.namespace}: ${gaps.get(target.namespace)} ms`);
  assert.ok(gaps.get(CLUSTER_TARGET)! >= input.clusterCooldownMs, `cluster-wide: ${gaps.get(CLUSTER_TARGET)} ms`);
  // without the cooldowns the same draws do land closer: the rule above is what keeps them apart
  const free = smallestGaps(planSoak({ ...input, targetCooldownMs: 0, clusterCooldownMs: 0 }));
  assert.ok(free.get(CLUSTER_TARGET)! < input.clusterCooldownMs);
  assert.ok(input.targets.some((target) => free.get(target.namespace)! < input.targetCooldownMs));
});

test('cluster-wide faults go to the cluster, a hook is only killed where there is one, and a weight of 0 is never drawn', () => {
  const plan = planSoak({ ...input, faults: input.faults.map((f) => (f.fault === 'evict' ? { ...f, weight: 0 } : f)) });
  const leaderhook = new Set(input.targets.filter((t) => t.withLeaderhook).map((t) => t.namespace));
  for (const { fault, target } of plan) {
    assert.equal(target === CLUSTER_TARGET, ['delete-webhook-replica', 'restart-apiserver', 'drain-node'].includes(fault), `${fault} on ${target}`);
    if (fault === 'kill-hook') assert.ok(leaderhook.has(target), `kill-hook on ${target}`);
  }
  assert.ok(plan.some((f) => f.fault === 'kill-hook'));
  assert.ok(!plan.some((f) => f.fault === 'evict'));
});

test("a fault kind of weight 0 leaves a seed's schedule as it was without it: a drain-less soak on one node runs the faults of its seed", () => {
  const withDrain = planSoak({ ...input, faults: [...input.faults, { fault: 'drain-node', weight: 1 }] });
  assert.ok(
    withDrain.some((f) => f.fault === 'drain-node' && f.target === CLUSTER_TARGET),
    'drawn where it weighs',
  );
  assert.notDeepEqual(withDrain, planSoak(input));
  assert.deepEqual(planSoak({ ...input, faults: [...input.faults, { fault: 'drain-node', weight: 0 }] }), planSoak(input));
});

test("a fault a target's operator has no meaning for never lands on it; an empty exclusion leaves a seed's schedule as it was", () => {
  const excluding = input.targets.map((target) => (target.namespace.startsWith('lfl-') ? { ...target, excludedFaults: ['rollout-restart' as const] } : target));
  const plan = planSoak({ ...input, targets: excluding });
  assert.ok(!plan.some((f) => f.fault === 'rollout-restart' && f.target.startsWith('lfl-')));
  assert.ok(plan.some((f) => f.fault === 'rollout-restart' && f.target.startsWith('lease-')));
  assert.ok(
    plan.some((f) => f.fault === 'delete-leader' && f.target.startsWith('lfl-')),
    'its other faults still land',
  );
  assert.deepEqual(planSoak({ ...input, targets: input.targets.map((target) => ({ ...target, excludedFaults: [] })) }), planSoak(input));
  assert.throws(
    () => planSoak({ ...input, targets: input.targets.map((target) => ({ ...target, excludedFaults: ['evict' as const] })) }),
    /"evict" means nothing for the operator of any target namespace: give it weight 0/,
  );
});

test('the drain takes the schedulable node the most leaders run on, and none where no other node could take its pods', () => {
  const nodes = [
    { name: 'node-a', unschedulable: false },
    { name: 'node-b', unschedulable: false },
    { name: 'node-c', unschedulable: false },
  ];
  assert.equal(nodeToDrain(nodes, ['node-b', 'node-c', 'node-b', undefined]), 'node-b');
  // ties go to the first by name, whatever the order the nodes come in
  assert.equal(nodeToDrain([...nodes].reverse(), ['node-c', 'node-b']), 'node-b');
  assert.equal(nodeToDrain(nodes, []), 'node-a');
  // a cordoned node is never taken, however many leaders it holds
  assert.equal(nodeToDrain([{ ...nodes[0]!, unschedulable: true }, nodes[1]!, nodes[2]!], ['node-a', 'node-a', 'node-c']), 'node-c');
  assert.equal(nodeToDrain([nodes[0]!], ['node-a']), undefined);
  assert.equal(nodeToDrain([nodes[0]!, { ...nodes[1]!, unschedulable: true }], ['node-a']), undefined);
});

test('without cooldowns, the faults come at the mean interval and in the proportions of their weights', () => {
  const plan = planSoak({
    ...input,
    durationMs: 100 * HOUR,
    faults: [
      { fault: 'delete-leader', weight: 3 },
      { fault: 'evict', weight: 1 },
    ],
    targetCooldownMs: 0,
    settleMs: 0,
  });
  const expected = (100 * HOUR) / input.meanIntervalMs;
  assert.ok(Math.abs(plan.length - expected) < 0.05 * expected, `${plan.length} faults, about ${expected} expected`);
  const deletes = plan.filter((f) => f.fault === 'delete-leader').length;
  assert.ok(Math.abs(deletes / plan.length - 0.75) < 0.02, `${deletes} of ${plan.length} deletes, 3 in 4 expected`);
});

test('mulberry32 is uniform in [0, 1)', () => {
  const random = mulberry32(7);
  const draws = Array.from({ length: 10_000 }, random);
  assert.ok(draws.every((x) => x >= 0 && x < 1));
  const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
  assert.ok(Math.abs(mean - 0.5) < 0.01, `mean ${mean}`);
});

test('a bad input is refused with what is wrong in it', () => {
  const cases: [Partial<SoakPlanInput>, RegExp][] = [
    [{ durationMs: 0 }, /the soak's duration must be a positive number of ms, got 0/],
    [{ durationMs: Number.NaN }, /the soak's duration must be a positive number of ms, got NaN/],
    [{ meanIntervalMs: -1 }, /the mean interval between faults must be a positive number of ms, got -1/],
    [{ seed: 1.5 }, /the seed must be a 32-bit integer, got 1.5/],
    [{ targetCooldownMs: -5 }, /targetCooldownMs must be a number of ms of at least 0, got -5/],
    [{ settleMs: 2 * HOUR }, /settleMs \(7200000\) leaves no time for faults in a soak of 7200000 ms/],
    [{ faults: [] }, /the soak needs at least one fault kind/],
    [{ faults: [{ fault: 'evict', weight: -1 }] }, /the weight of "evict" must be a number of at least 0, got -1/],
    [{ faults: [{ fault: 'evict', weight: 0 }] }, /every fault kind has weight 0: nothing to schedule/],
    [{ faults: [{ fault: 'reboot' as 'evict', weight: 1 }] }, /unknown fault kind "reboot"; the soak knows delete-leader, /],
    [
      {
        faults: [
          { fault: 'evict', weight: 1 },
          { fault: 'evict', weight: 2 },
        ],
      },
      /fault kind "evict" is given twice/,
    ],
    [{ targets: [] }, /"delete-leader" hits a namespace, and no target namespace is given/],
    [{ targets: [{ namespace: 'a', withLeaderhook: false }] }, /"kill-hook" needs a namespace with leaderhook, and no target has it/],
    [
      {
        targets: [
          { namespace: 'a', withLeaderhook: true },
          { namespace: 'a', withLeaderhook: false },
        ],
      },
      /target namespace "a" is given twice/,
    ],
  ];
  for (const [change, message] of cases) assert.throws(() => planSoak({ ...input, ...change }), message);
  // cluster-wide faults alone need no target
  assert.ok(planSoak({ ...input, targets: [], faults: [{ fault: 'restart-apiserver', weight: 1 }] }).length > 0);
});

test('--duration reads hours, minutes and seconds, and refuses anything else', () => {
  assert.equal(parseDurationMs('2h'), 2 * HOUR);
  assert.equal(parseDurationMs('90m'), 90 * 60_000);
  assert.equal(parseDurationMs('1h30m'), 90 * 60_000);
  assert.equal(parseDurationMs('45s'), 45_000);
  for (const text of ['', '2', '2 hours', '0h', '1.5h', 'h']) {
    assert.throws(() => parseDurationMs(text), new RegExp(`a duration is hours, minutes and seconds, like 2h, 90m or 1h30m; got "${text}"`));
  }
});
