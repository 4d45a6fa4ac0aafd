/**
 * The checks of the installation itself, before any namespace: the webhook
 * is registered as deploy/ ships it, the caBundle verifies the certificate
 * it serves, and its Service has somewhere to send reviews.
 */
import type { V1EndpointSlice, V1MutatingWebhookConfiguration, V1Service } from '@kubernetes/client-node';
import { errorMessage } from '../error-message.ts';
import type { Wire } from '../kube/types.ts';
import { apiPaths, type CheckApi, listAll, remedyForError, statusOf } from './api.ts';
import { verifyServingCertificate } from './certificate.ts';
import { EXPECTED_WEBHOOKS, registrationProblems, webhookService } from './registration.ts';
import { type CheckResult, failed, passed } from './report.ts';

const REAPPLY = 'apply deploy/ again: kubectl apply -k deploy/ (or your overlay of it)';

export async function checkRegistration(api: CheckApi, name: string): Promise<{ result: CheckResult; config?: Wire<V1MutatingWebhookConfiguration> }> {
  const title = 'webhook registration';
  let config: Wire<V1MutatingWebhookConfiguration>;
  try {
    config = await api.get(apiPaths.webhookConfiguration(name));
  } catch (error) {
    if (statusOf(error) === 404) {
      return { result: failed(title, `MutatingWebhookConfiguration ${name} not found`, `${REAPPLY}; or name yours with --webhook-configuration`) };
    }
    return { result: failed(title, errorMessage(error), remedyForError(error, 'get mutatingwebhookconfigurations')) };
  }
  const problems = registrationProblems(config);
  if (problems.length > 0) {
    const remedy = problems.some((p) => p.includes('caBundle'))
      ? `${REAPPLY}; cert-manager's cainjector fills caBundle from the annotation cert-manager.io/inject-ca-from (kubectl -n cert-manager logs deploy/cert-manager-cainjector)`
      : REAPPLY;
    return { result: failed(title, `MutatingWebhookConfiguration ${name}: ${problems.join('; ')}`, remedy), config };
  }
  return { result: passed(title, `MutatingWebhookConfiguration ${name} has ${EXPECTED_WEBHOOKS.map((w) => w.name).join(', ')} as deploy/ ships them`), config };
}

/** The distinct CA bundles of leaderhook's entries, decoded. */
function caBundles(config: Wire<V1MutatingWebhookConfiguration> | undefined): string[] {
  const names = new Set(EXPECTED_WEBHOOKS.map((w) => w.name));
  const encoded = (config?.webhooks ?? []).filter((w) => names.has(w.name)).map((w) => w.clientConfig?.caBundle ?? '');
  return [...new Set(encoded.filter((b) => b !== ''))].map((b) => Buffer.from(b, 'base64').toString('utf8'));
}

export async function checkServingCertificate(
  api: CheckApi,
  config: Wire<V1MutatingWebhookConfiguration> | undefined,
  secretName: string,
  now: Date,
): Promise<CheckResult> {
  const title = 'serving certificate';
  const service = webhookService(config);
  // The name the API server dials and verifies for a service reference.
  const dnsName = `${service.name}.${service.namespace}.svc`;
  const bundles = caBundles(config);
  if (bundles.length === 0) return failed(title, 'no caBundle in the registration to verify it with', 'fix the webhook registration (above) first');
  let data: Record<string, string>;
  try {
    data = (await api.get<{ data?: Record<string, string> }>(apiPaths.secret(service.namespace, secretName))).data ?? {};
  } catch (error) {
    if (statusOf(error) === 404) {
      return failed(
        title,
        `Secret ${service.namespace}/${secretName} not found`,
        `cert-manager writes it for the Certificate of deploy/certificates.yaml: kubectl -n ${service.namespace} describe certificate; or name yours with --tls-secret`,
      );
    }
    return failed(title, errorMessage(error), remedyForError(error, `get secrets in ${service.namespace}`));
  }
  const decode = (key: string) => (data[key] ? Buffer.from(data[key], 'base64').toString('utf8') : undefined);
  const chain = decode('tls.crt');
  if (!chain) return failed(title, `Secret ${service.namespace}/${secretName} has no tls.crt`, `kubectl -n ${service.namespace} describe certificate`);
  const key = decode('tls.key');
  // Every entry's caBundle must verify it: the API server uses the one of the entry it calls.
  const verdicts = bundles.map((caBundle) => verifyServingCertificate({ caBundle, chain, ...(key ? { key } : {}), dnsName, now }));
  const broken = verdicts.find((v) => v.problems.length > 0);
  if (broken) {
    return failed(
      title,
      `tls.crt of Secret ${service.namespace}/${secretName}: ${broken.problems.join('; ')}`,
      `let cert-manager re-issue it (kubectl -n ${service.namespace} describe certificate; cmctl renew), and check that caBundle comes from the same CA (annotation cert-manager.io/inject-ca-from)`,
    );
  }
  const { daysLeft, notAfter } = verdicts[0]!;
  return passed(
    title,
    `the caBundle verifies tls.crt of Secret ${service.namespace}/${secretName} for ${dnsName}; ${daysLeft} days left (until ${notAfter?.toISOString()})`,
  );
}

export async function checkEndpoints(api: CheckApi, config: Wire<V1MutatingWebhookConfiguration> | undefined): Promise<CheckResult> {
  const title = 'webhook endpoints';
  const { namespace, name } = webhookService(config);
  let service: Wire<V1Service>;
  let slices: Wire<V1EndpointSlice>[];
  try {
    service = await api.get(apiPaths.service(namespace, name));
    slices = await listAll(api, apiPaths.endpointSlices(namespace), { labelSelector: `kubernetes.io/service-name=${name}` });
  } catch (error) {
    if (statusOf(error) === 404) return failed(title, `Service ${namespace}/${name} not found`, REAPPLY);
    return failed(title, errorMessage(error), remedyForError(error, `get services and list endpointslices in ${namespace}`));
  }
  const endpoints = slices.flatMap((s) => s.endpoints ?? []);
  // An endpoint without a ready condition counts as ready (discovery.k8s.io/v1).
  const ready = endpoints.filter((e) => e.conditions?.ready !== false).length;
  if (ready > 0) return passed(title, `Service ${namespace}/${name} has ${ready} ready endpoint${ready === 1 ? '' : 's'}`);
  const selector = Object.entries(service.spec?.selector ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  return failed(
    title,
    `Service ${namespace}/${name} has no ready endpoint (${endpoints.length} not ready): no review reaches the webhook`,
    `see why its pods are not Ready (kubectl -n ${namespace} get pods -l ${selector || '<its selector>'}; kubectl -n ${namespace} describe deployment), or scale the webhook's Deployment up`,
  );
}
