/**
 * The soak's operators (test/bench/soak-operators.ts): each reads the soak's
 * heartbeat interval in its own form, and kopf-operator, bare pods that no
 * controller rolls out, is never drawn a rollout restart.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { excludedFaults, HEARTBEAT_INTERVAL_MS, heartbeatIntervalArg, KOPF_EXCLUDED_FAULTS, SOAK_OPERATORS } from '../bench/soak-operators.ts';
import { CLUSTER_TARGET, planSoak, SOAK_FAULTS } from '../bench/soak-plan.ts';

describe('the soak operators', () => {
  it('are every operator of test/operators, kopf-operator among them', () => {
    assert.deepEqual([...SOAK_OPERATORS].sort(), ['client-go-operator', 'josdk-operator', 'kopf-operator', 'lease-operator', 'lfl-operator']);
  });

  it('get the heartbeat interval as each parses it: a duration, for kopf-operator seconds', () => {
    assert.equal(HEARTBEAT_INTERVAL_MS, 500);
    assert.equal(heartbeatIntervalArg('lfl-operator'), '--heartbeat-interval=500ms');
    assert.equal(heartbeatIntervalArg('josdk-operator'), '--heartbeat-interval=500ms');
    assert.equal(heartbeatIntervalArg('kopf-operator'), '--heartbeat-interval=0.5');
    assert.equal(heartbeatIntervalArg('kopf-operator', 1_250), '--heartbeat-interval=1.25');
  });

  it('exclude no fault but for kopf-operator, and there only target faults, each with a reason', () => {
    for (const operator of SOAK_OPERATORS.filter((name) => name !== 'kopf-operator')) assert.deepEqual(excludedFaults(operator), []);
    assert.deepEqual(excludedFaults('kopf-operator'), ['rollout-restart']);
    for (const [fault, reason] of Object.entries(KOPF_EXCLUDED_FAULTS)) {
      assert.equal(SOAK_FAULTS[fault as keyof typeof SOAK_FAULTS].scope, 'target', fault);
      assert.ok(reason && reason.length > 0, `${fault} has a reason`);
    }
  });

  it("plan kopf-operator's namespaces every other fault, and no rollout restart", () => {
    const targets = SOAK_OPERATORS.flatMap((operator) =>
      [true, false].map((withLeaderhook) => ({ namespace: `${operator}-${withLeaderhook}`, withLeaderhook, excludedFaults: excludedFaults(operator) })),
    );
    const plan = planSoak({
      durationMs: 10 * 3_600_000,
      meanIntervalMs: 30_000,
      faults: Object.keys(SOAK_FAULTS).map((fault) => ({ fault: fault as keyof typeof SOAK_FAULTS, weight: 1 })),
      targets,
      seed: 7,
      targetCooldownMs: 120_000,
      clusterCooldownMs: 180_000,
    });
    const onKopf = new Set(plan.filter((f) => f.target.startsWith('kopf-operator-')).map((f) => f.fault));
    assert.deepEqual([...onKopf].sort(), ['crash-operator', 'delete-leader', 'evict', 'kill-hook']);
    assert.ok(plan.some((f) => f.fault === 'rollout-restart' && f.target !== CLUSTER_TARGET));
  });
});
