/**
 * Renewing the webhook's serving certificate with cert-manager while pods are
 * created, and watching each renewal reach every webhook replica.
 *
 * A renewal is forced the way `cmctl renew` does it: the Certificate's
 * `Issuing` condition set to True, which cert-manager's issuing controller
 * acts on (deploy/ uses `rotationPolicy: Always`, so every renewal brings a
 * new key too). The new pair reaches the webhook's Secret volume when the
 * kubelet next syncs the pod (its sync period, a minute by default), and the
 * webhook swaps it in (src/webhook/tls.ts). Each replica is asked which
 * certificate it serves by a TLS handshake verified against the caBundle of
 * the webhook registration, as the API server verifies it.
 */
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { LogTail, webhookCallErrors } from './apiserver-log.ts';
import { admissionRegistration, clusterStateDir, core } from './kube.ts';
import { kubectl } from './leaderhook.ts';
import { type PodCreateLoadResult, startPodCreateLoad } from './pod-create-load.ts';
import { waitFor } from './wait.ts';

const NAMESPACE = 'leaderhook-system';
const CERTIFICATE = 'leaderhook-webhook';
const SERVING_SECRET = 'leaderhook-webhook-tls';
const CA_SECRET = 'leaderhook-ca';
const REGISTRATION = 'leaderhook';
/** A name the serving certificate carries (deploy/certificates.yaml), as the API server asks for it. */
const SERVER_NAME = 'leaderhook-webhook.leaderhook-system.svc';
const WEBHOOK_PORT = 8443;

export interface WebhookReplica {
  name: string;
  ip: string;
  restarts: number;
}

async function secretData(name: string, key: string, namespace = NAMESPACE): Promise<Buffer> {
  const secret = await core.readNamespacedSecret({ name, namespace });
  const value = secret.data?.[key];
  if (!value) throw new Error(`Secret ${namespace}/${name} has no ${key}`);
  return Buffer.from(value, 'base64');
}

/** The serving certificate in the Secret now. */
export async function issuedCertificate(namespace = NAMESPACE): Promise<X509Certificate> {
  return new X509Certificate(await secretData(SERVING_SECRET, 'tls.crt', namespace));
}

/** The serial number of the certificate in the serving Secret now. */
export async function issuedSerial(namespace = NAMESPACE): Promise<string> {
  return (await issuedCertificate(namespace)).serialNumber;
}

/** The CA certificate in the CA's own Secret: what the CA issuer signs with now. */
export async function issuingCa(namespace = NAMESPACE): Promise<X509Certificate> {
  return new X509Certificate(await secretData(CA_SECRET, 'tls.crt', namespace));
}

/** The CA the API server trusts: the caBundle cainjector copied into the webhook registration. */
export async function trustedCa(registration = REGISTRATION): Promise<Buffer> {
  const config = await admissionRegistration.readMutatingWebhookConfiguration({ name: registration });
  const bundle = config.webhooks?.[0]?.clientConfig.caBundle;
  if (!bundle) throw new Error(`MutatingWebhookConfiguration ${registration} has no caBundle`);
  return Buffer.from(bundle, 'base64');
}

/** The webhook's running replicas, with their pod IPs. */
export async function webhookReplicas(): Promise<WebhookReplica[]> {
  const pods = await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'app.kubernetes.io/component=webhook' });
  return pods.items
    .filter((p) => p.status?.phase === 'Running' && p.status.podIP && !p.metadata?.deletionTimestamp)
    .map((p) => ({
      name: p.metadata!.name!,
      ip: p.status!.podIP!,
      restarts: p.status?.containerStatuses?.reduce((sum, s) => sum + s.restartCount, 0) ?? 0,
    }));
}

/** The serial number of the certificate `replica` serves to a new connection, verified against `ca`. */
export function servedSerial(replica: WebhookReplica, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: replica.ip, port: WEBHOOK_PORT, servername: SERVER_NAME, ca, timeout: 5000 }, () => {
      const serial = socket.getPeerX509Certificate()?.serialNumber;
      socket.end();
      if (serial) resolve(serial);
      else reject(new Error(`${replica.name} sent no certificate`));
    });
    socket.on('timeout', () => socket.destroy(new Error(`TLS handshake with ${replica.name} (${replica.ip}) timed out`)));
    socket.on('error', (error) => reject(new Error(`TLS handshake with ${replica.name} (${replica.ip}): ${error.message}`)));
  });
}

/** `replica`'s /metrics page, read over the same verified TLS. */
export function webhookMetrics(replica: WebhookReplica, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: replica.ip, port: WEBHOOK_PORT, servername: SERVER_NAME, ca, path: '/metrics', timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${replica.name} /metrics answered HTTP ${res.statusCode}`));
        else resolve(body);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${replica.name} /metrics timed out`)));
    req.on('error', (error) => reject(new Error(`${replica.name} /metrics: ${error.message}`)));
    req.end();
  });
}

/** One counter of `replica`'s /metrics. */
export async function webhookCounter(replica: WebhookReplica, ca: Buffer, metric: string): Promise<number> {
  const line = (await webhookMetrics(replica, ca)).split('\n').find((l) => l.startsWith(`${metric} `));
  if (!line) throw new Error(`${replica.name} /metrics has no ${metric}`);
  return Number(line.slice(metric.length + 1));
}

interface CertificateStatus {
  generation: number;
  issuing: boolean;
  ready: boolean;
}

function certificateStatus(namespace: string): CertificateStatus {
  const crt = JSON.parse(kubectl(['-n', namespace, 'get', 'certificate', CERTIFICATE, '-o', 'json'])) as {
    metadata: { generation: number };
    status?: { conditions?: { type: string; status: string }[] };
  };
  const condition = (type: string) => crt.status?.conditions?.find((c) => c.type === type)?.status === 'True';
  return { generation: crt.metadata.generation, issuing: condition('Issuing'), ready: condition('Ready') };
}

/**
 * Forces one renewal and waits until the Secret holds a certificate with a
 * serial other than `before`; returns the new serial.
 */
export async function renewServingCertificate(before: string, timeoutMs = 60_000, namespace = NAMESPACE): Promise<string> {
  const settled = await waitFor(
    'the serving Certificate to be Ready and not issuing',
    async () => {
      const status = certificateStatus(namespace);
      return status.ready && !status.issuing ? status : undefined;
    },
    timeoutMs,
    250,
  );
  const condition = {
    type: 'Issuing',
    status: 'True',
    reason: 'ManuallyTriggered',
    message: 'Certificate re-issuance manually triggered (leaderhook rotation test)',
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    observedGeneration: settled.generation,
  };
  kubectl([
    '-n',
    namespace,
    'patch',
    'certificate',
    CERTIFICATE,
    '--subresource=status',
    '--type=json',
    '-p',
    JSON.stringify([{ op: 'add', path: '/status/conditions/-', value: condition }]),
  ]);
  return waitFor(
    `cert-manager to issue a certificate other than serial ${before}`,
    async () => {
      const serial = await issuedSerial(namespace);
      return serial !== before ? serial : undefined;
    },
    timeoutMs,
    250,
  );
}

export const RELOADS_METRIC = 'leaderhook_certificate_reloads_total';
export const RELOAD_ERRORS_METRIC = 'leaderhook_certificate_reload_errors_total';

export interface ReplicaOutcome {
  name: string;
  /** Reloads counted by the replica's metric during the run. */
  reloads: number;
  reloadErrors: number;
  /** Container restarts during the run. */
  restarts: number;
}

export interface RotationRound {
  /** From the renewal's trigger to the new certificate in the Secret. */
  issuedMs: number;
  /** From the new certificate in the Secret to the last replica serving it. */
  servedByAllMs: number;
}

export interface RotationUnderLoadResult {
  rounds: RotationRound[];
  replicas: ReplicaOutcome[];
  /** TLS handshakes with a replica that failed while the rounds waited for the new certificate. */
  handshakeErrors: string[];
  caUnchanged: boolean;
  load: PodCreateLoadResult;
  apiServer: { tls: string[]; other: string[] };
  durationMs: number;
}

export interface RotationUnderLoadOptions {
  /** Opted-in namespace the pods are created in; it must have KUBEBUILDER_SERVICE_ACCOUNT. */
  namespace: string;
  renewals: number;
  ratePerSecond: number;
  /** How long one renewal may take to reach every replica (the kubelet's sync period, and some). */
  propagationTimeoutMs?: number;
  onRound?: (round: number, result: RotationRound) => void;
}

/**
 * `renewals` renewals one after another, each waited for until every
 * replica serves it, while pods are created in `namespace` at
 * `ratePerSecond` the whole time.
 */
export async function rotateUnderLoad(options: RotationUnderLoadOptions): Promise<RotationUnderLoadResult> {
  const { namespace, renewals, ratePerSecond, propagationTimeoutMs = 180_000, onRound } = options;
  const startedAt = Date.now();
  const ca = await trustedCa();
  const replicas = await webhookReplicas();
  if (replicas.length === 0) throw new Error(`no running webhook replica in ${NAMESPACE}`);
  const reloadsBefore = await Promise.all(replicas.map((r) => webhookCounter(r, ca, RELOADS_METRIC)));
  const log = new LogTail(join(clusterStateDir, 'logs', 'kube-apiserver.log'));
  const load = startPodCreateLoad(namespace, { ratePerSecond });
  const rounds: RotationRound[] = [];
  const handshakeErrors: string[] = [];
  let loadResult: PodCreateLoadResult | undefined;
  try {
    for (let round = 1; round <= renewals; round++) {
      const triggeredAt = Date.now();
      const serial = await renewServingCertificate(await issuedSerial());
      const issuedAt = Date.now();
      await waitFor(
        `every webhook replica to serve certificate ${serial} (renewal ${round})`,
        async () => {
          const served = await Promise.all(
            replicas.map((r) =>
              servedSerial(r, ca).catch((error: Error) => {
                handshakeErrors.push(error.message);
                return undefined;
              }),
            ),
          );
          return served.every((s) => s === serial);
        },
        propagationTimeoutMs,
        500,
      );
      const result = { issuedMs: issuedAt - triggeredAt, servedByAllMs: Date.now() - issuedAt };
      rounds.push(result);
      onRound?.(round, result);
    }
  } finally {
    loadResult = await load.stop();
  }
  const after = await webhookReplicas();
  const outcomes = await Promise.all(
    replicas.map(async (r, i): Promise<ReplicaOutcome> => {
      const now = after.find((a) => a.name === r.name);
      return {
        name: r.name,
        reloads: (await webhookCounter(r, ca, RELOADS_METRIC)) - reloadsBefore[i]!,
        reloadErrors: await webhookCounter(r, ca, RELOAD_ERRORS_METRIC),
        restarts: now ? now.restarts - r.restarts : Number.NaN,
      };
    }),
  );
  return {
    rounds,
    replicas: outcomes,
    handshakeErrors,
    caUnchanged: (await trustedCa()).equals(ca),
    load: loadResult,
    apiServer: webhookCallErrors(log.lines()),
    durationMs: Date.now() - startedAt,
  };
}
