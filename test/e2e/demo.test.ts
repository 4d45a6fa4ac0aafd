/**
 * The scenario `npm run demo` shows, on the real cluster: four leaders
 * deleted at once, two in a namespace opted in to leaderhook and two in one
 * that is not. With leaderhook both locks are freed by the release hook (R1)
 * before the old pod object is gone; without it the ConfigMap lock waits for
 * the garbage collector and the Lease for its expiry. The demo's report is
 * rendered from what was observed.
 *
 *   test/cluster/in-netns.sh node_modules/.bin/node --test test/e2e/demo.test.ts
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { report } from '../../scripts/demo/report.ts';
import { deleteDemoNamespaces, type Outcome, runDemoScenario } from '../../scripts/demo/scenario.ts';
import { connectTestCluster } from '../support/kube.ts';
import { leaseLock, lflLock, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { assertNoSplitBrain, releaseEvents } from '../support/recording.ts';
import { installLeaderhook } from '../support/leaderhook.ts';

connectTestCluster();

const suffix = randomBytes(3).toString('hex');
const names = { with: `demo-with-${suffix}`, without: `demo-without-${suffix}` };
let uninstall: () => Promise<void> = async () => {};

before(async () => {
  uninstall = await installLeaderhook();
});
after(async () => {
  await deleteDemoNamespaces([names.with, names.without]);
  await uninstall();
});

test('npm run demo: with leaderhook the hook frees both locks by R1; without, the GC and the Lease expiry do', { timeout: 300_000 }, async (t) => {
  const { outcomes, namespaces } = await runDemoScenario(names, (line) => t.diagnostic(line));
  const find = (operator: Outcome['operator'], withLeaderhook: boolean) => {
    const found = outcomes.find((o) => o.operator === operator && o.withLeaderhook === withLeaderhook);
    assert.ok(found, `an outcome for ${operator} ${withLeaderhook ? 'with' : 'without'} leaderhook`);
    return found;
  };
  assert.equal(outcomes.length, 4);
  const [withNs, withoutNs] = namespaces;
  assert.ok(withNs && withoutNs);

  for (const operator of ['lfl-operator', 'lease-operator'] as const) {
    const hooked = find(operator, true);
    assert.notEqual(hooked.newLeader, hooked.oldLeader);
    assert.equal(releaseEvents(withNs.recording, hooked.oldLeader, 'R1').length, 1, `one R1 release Event for ${hooked.oldLeader}`);
    assert.match(hooked.freedBy, /rule R1/);
    // The GC cannot act before the pod object is gone: freed earlier, it was the hook.
    assert.ok(
      hooked.lockFreedMs !== undefined && hooked.oldPodGoneMs !== undefined && hooked.lockFreedMs < hooked.oldPodGoneMs,
      `${operator}: lock freed (${hooked.lockFreedMs} ms) before the old pod was gone (${hooked.oldPodGoneMs} ms)`,
    );
  }

  assert.deepEqual(
    withoutNs.recording.events.filter((e) => e.object.reason === 'LeaderLockReleased').map((e) => e.object.message),
    [],
    'nothing released a lock in the namespace without leaderhook',
  );
  assert.ok(
    !withoutNs.recording.pods.some((e) => e.object.spec?.initContainers?.some((c) => c.name === RELEASE_HOOK_CONTAINER)),
    'no pod of the namespace without leaderhook carries the hook',
  );
  const lfl = find('lfl-operator', false);
  assert.match(lfl.freedBy, /garbage collector/);
  assert.ok(
    lfl.lockFreedMs !== undefined && lfl.oldPodGoneMs !== undefined && lfl.lockFreedMs >= lfl.oldPodGoneMs,
    `without leaderhook the lock (${lfl.lockFreedMs} ms) outlived the pod object (${lfl.oldPodGoneMs} ms)`,
  );
  const lease = find('lease-operator', false);
  assert.match(lease.freedBy, /Lease ran out/);
  const hookedLease = find('lease-operator', true).newLeaderMs;
  assert.ok(
    lease.newLeaderMs !== undefined && hookedLease !== undefined && lease.newLeaderMs > hookedLease,
    `the Lease operator fails over sooner with leaderhook (${hookedLease} ms against ${lease.newLeaderMs} ms)`,
  );

  for (const ns of namespaces) {
    assertNoSplitBrain(ns.recording, lflLock);
    assertNoSplitBrain(ns.recording, leaseLock);
  }

  const text = report(outcomes);
  for (const o of outcomes) assert.ok(o.newLeader && text.includes(o.newLeader), `the report names new leader ${o.newLeader}`);
  t.diagnostic(text);
});
