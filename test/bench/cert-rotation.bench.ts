/**
 * `npm run bench:cert-rotation`: the webhook's serving certificate renewed
 * by cert-manager again and again while pods are created in an opted-in
 * namespace, on the local cluster with leaderhook installed from deploy/.
 *
 *   npm run bench:cert-rotation -- [--renewals 30] [--rate 20]
 *
 * Each renewal is forced as `cmctl renew` does and waited for until every
 * webhook replica serves the new certificate (test/support/cert-rotation.ts);
 * the pod creates (scheduling-gated, deleted at once) run the whole time.
 * Prints how long issuance and the kubelet's volume update took, how many
 * pods came back without the injection, the API server's failed calls to
 * the webhook, and each replica's reload counter. Runs inside the cluster's
 * network namespace (the npm script enters it; the client refuses otherwise).
 */
import { parseArgs } from 'node:util';
import { rotateUnderLoad } from '../support/cert-rotation.ts';
import { connectTestCluster, core, createTestNamespace, refuseLeftovers } from '../support/kube.ts';
import { INJECTION_LABEL, installLeaderhook } from '../support/leaderhook.ts';
import { KUBEBUILDER_SERVICE_ACCOUNT } from '../support/pod-create-load.ts';
import { percentile } from './stats.ts';

connectTestCluster();
await refuseLeftovers('bench:cert-rotation');

const usage = `usage: npm run bench:cert-rotation -- [--renewals 30] [--rate 20]

  --renewals N   renewals, one after another, each until every webhook replica serves it
  --rate R       pod creates per second for the whole run
`;
const { values } = parseArgs({
  options: {
    renewals: { type: 'string', default: '30' },
    rate: { type: 'string', default: '20' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const renewals = Number(values.renewals);
const rate = Number(values.rate);
if (!Number.isInteger(renewals) || renewals < 1) throw new Error(`--renewals must be a positive whole number, got ${values.renewals}`);
if (!(rate > 0 && rate <= 200)) throw new Error(`--rate must be above 0 and at most 200 creates per second, got ${values.rate}`);

const say = (line: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const seconds = (ms: number) => (ms / 1000).toFixed(1);
const row = (label: string, values: readonly number[]) =>
  `| ${label} | ${[50, 95].map((p) => seconds(percentile(values, p))).join(' | ')} | ${seconds(Math.max(...values))} |`;

say('installing leaderhook (deploy/)');
const uninstall = await installLeaderhook({ debugLog: false });
const ns = await createTestNamespace('bench-rotation', INJECTION_LABEL);
try {
  await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name: KUBEBUILDER_SERVICE_ACCOUNT } } });
  say(`${renewals} renewals while creating ${rate} pods/s in ${ns.name}`);
  const result = await rotateUnderLoad({
    namespace: ns.name,
    renewals,
    ratePerSecond: rate,
    onRound: (round, r) => say(`renewal ${round}/${renewals}: issued ${seconds(r.issuedMs)} s, served by every replica ${seconds(r.servedByAllMs)} s later`),
  });
  const { load } = result;
  const perSecond = load.perSecond;
  process.stdout.write(
    [
      '',
      `npm run bench:cert-rotation -- --renewals ${renewals} --rate ${rate} (${new Date().toISOString().slice(0, 10)}): ${seconds(result.durationMs)} s in all`,
      '',
      '| phase of a renewal | p50 s | p95 s | max s |',
      '| --- | ---: | ---: | ---: |',
      row(
        'trigger → new certificate in the Secret (cert-manager)',
        result.rounds.map((r) => r.issuedMs),
      ),
      row(
        'Secret → served by every replica (kubelet volume update, webhook reload)',
        result.rounds.map((r) => r.servedByAllMs),
      ),
      '',
      `- pods created: ${load.created} in ${load.seconds} s; per whole second min ${Math.min(...perSecond)}, p1 ${percentile(perSecond, 1)}, p50 ${percentile(perSecond, 50)}, max ${Math.max(...perSecond)}; seconds below ${rate}/s: ${perSecond.filter((n) => n < rate).length} of ${perSecond.length}; skipped (too many in flight) ${load.skipped}`,
      `- pods without the injection: ${load.uninjected.length}; creates failed: ${load.failed}${load.failures.length ? ` (${load.failures.join('; ')})` : ''}`,
      `- API server failed calls to the webhook: ${result.apiServer.tls.length} TLS, ${result.apiServer.other.length} other`,
      `- TLS handshakes with a replica that failed verification: ${result.handshakeErrors.length}; CA unchanged: ${result.caUnchanged}`,
      ...result.replicas.map(
        (r) => `- ${r.name}: ${r.reloads} reloads counted (leaderhook_certificate_reloads_total), ${r.reloadErrors} refused, ${r.restarts} restarts`,
      ),
      '',
    ].join('\n'),
  );
  for (const line of [...result.apiServer.tls, ...result.apiServer.other].slice(0, 5)) say(`API server: ${line}`);
} finally {
  await ns.cleanup();
  await uninstall();
}
