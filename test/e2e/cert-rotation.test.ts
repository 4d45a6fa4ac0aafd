/**
 * The serving certificate rotates under load: with leaderhook installed from
 * deploy/ (cert-manager issuing its certificate), two renewals are forced
 * while pods are created in an opted-in namespace at 20 per second the whole
 * time. Every pod comes back injected, the API server logs no failed call to
 * the webhook (TLS or other), each replica's reload metric counts both
 * renewals, and nothing restarts. `npm run bench:cert-rotation` runs the
 * same with 30 renewals and prints the figures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { rotateUnderLoad } from '../support/cert-rotation.ts';
import { connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';
import { INJECTION_LABEL, installLeaderhook } from '../support/leaderhook.ts';
import { KUBEBUILDER_SERVICE_ACCOUNT } from '../support/pod-create-load.ts';

connectTestCluster();

const RENEWALS = 2;
const RATE = 20;

describe('the serving certificate rotates while pods are created', () => {
  let uninstall: (() => Promise<void>) | undefined;
  let ns: TestNamespace;

  before(async () => {
    uninstall = await installLeaderhook({ debugLog: false });
    ns = await createTestNamespace('e2e-rotation', INJECTION_LABEL);
    await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: KUBEBUILDER_SERVICE_ACCOUNT } } });
  });
  after(async () => {
    await ns?.cleanup();
    await uninstall?.();
  });

  test(`${RENEWALS} renewals at ${RATE} pod creates/s: every pod injected, no failed webhook call, every reload counted`, async (t) => {
    const result = await rotateUnderLoad({
      namespace: ns.name,
      renewals: RENEWALS,
      ratePerSecond: RATE,
      onRound: (round, r) => t.diagnostic(`renewal ${round}: issued in ${r.issuedMs} ms, served by every replica ${r.servedByAllMs} ms later`),
    });
    const { load } = result;
    t.diagnostic(
      `${load.created} pods in ${load.seconds} s (${Math.min(...load.perSecond)}–${Math.max(...load.perSecond)}/s), ${load.uninjected.length} uninjected, ${load.failed} failed, ${load.skipped} skipped; replicas ${JSON.stringify(result.replicas)}`,
    );

    // The load really ran at its rate: otherwise "0 uninjected" would say little. (A stall of the
    // machine's etcd can hold a second's creates back, and skip some; that is the machine, not leaderhook.)
    assert.ok(load.created >= RATE * (load.seconds - 2) * 0.9, `${load.created} creates in ${load.seconds} s at ${RATE}/s (${load.skipped} skipped)`);
    assert.deepEqual(load.failures, [], 'no create failed');
    assert.deepEqual(load.uninjected, [], 'every pod came back injected');
    assert.deepEqual(result.apiServer, { tls: [], other: [] }, "the API server's log has no failed call to the webhook");
    assert.deepEqual(result.handshakeErrors, [], 'every TLS handshake with a replica verified against the CA');
    assert.ok(result.caUnchanged, 'the CA the API server trusts stayed the same');
    assert.ok(result.replicas.length >= 2, 'both webhook replicas were followed');
    for (const replica of result.replicas) {
      assert.deepEqual(
        { reloads: replica.reloads, reloadErrors: replica.reloadErrors, restarts: replica.restarts },
        { reloads: RENEWALS, reloadErrors: 0, restarts: 0 },
        `${replica.name}: one reload per renewal, no refused pair, no restart`,
      );
    }
  });
});
