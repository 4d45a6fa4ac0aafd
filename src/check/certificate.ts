/**
 * Does the caBundle the API server holds verify the certificate the webhook
 * serves? The API server (Go's crypto/tls) dials `<service>.<namespace>.svc`
 * and checks the chain up to a certificate of the caBundle, every
 * certificate's validity period, the name among the subjectAltNames (the
 * common name does not count), and the serverAuth usage. This repeats those
 * checks on the PEM files, with the clock passed in, so a broken
 * certificate is named before a pod is created without its hook.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { certificateName } from '../webhook/tls.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Longer chains than this are not what cert-manager or any CA in use makes; stop rather than loop. */
const MAX_CHAIN = 8;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';

export interface ServingCertificateInput {
  /** PEM: the MutatingWebhookConfiguration's caBundle, decoded. */
  caBundle: string;
  /** PEM: tls.crt of the webhook's Secret, the serving certificate first, intermediates after it. */
  chain: string;
  /** PEM: tls.key of the Secret; checked against the certificate when given. */
  key?: string;
  /** The name the API server verifies: `<service>.<namespace>.svc`. */
  dnsName: string;
  now: Date;
}

export interface ServingCertificateVerdict {
  /** Empty when the API server would accept the certificate. */
  problems: string[];
  /** Whole days until the serving certificate expires (negative once expired); undefined when it cannot be read. */
  daysLeft?: number;
  notAfter?: Date;
}

/** Every certificate in a PEM text, in order. Throws with `what` named when one cannot be parsed. */
export function parseCertificates(pem: string, what: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new Error(`${what}: certificate ${i + 1} cannot be parsed: ${(error as Error).message}`);
    }
  });
}

function validityProblem(cert: X509Certificate, role: string, now: Date): string | undefined {
  if (now < cert.validFromDate) return `${role} is not valid before ${cert.validFromDate.toISOString()}`;
  if (now > cert.validToDate) return `${role} expired on ${cert.validToDate.toISOString()}`;
  return undefined;
}

function signs(issuer: X509Certificate, cert: X509Certificate): boolean {
  return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
}

/** The issuers from the serving certificate up to a caBundle certificate, or why there is no such path. */
function chainToBundle(leaf: X509Certificate, intermediates: X509Certificate[], roots: X509Certificate[]): { path: X509Certificate[] } | { problem: string } {
  // Go accepts a serving certificate that is itself in the pool of roots.
  if (roots.some((r) => r.fingerprint256 === leaf.fingerprint256)) return { path: [] };
  const path: X509Certificate[] = [];
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    const root = roots.find((r) => signs(r, current));
    if (root) return { path: [...path, root] };
    const next = intermediates.find((i) => !path.includes(i) && signs(i, current));
    if (!next) {
      const bundle = roots.map((r) => `"${certificateName(r)}"`).join(', ');
      return { problem: `the caBundle (${bundle}) does not verify it: it was issued by "${(current.issuer ?? '').replaceAll('\n', ', ')}"` };
    }
    path.push(next);
    current = next;
  }
  return { problem: `no path to the caBundle within ${MAX_CHAIN} certificates` };
}

/** What the API server would refuse about the webhook's serving certificate, and how long it has left. */
export function verifyServingCertificate(input: ServingCertificateInput): ServingCertificateVerdict {
  const problems: string[] = [];
  let chain: X509Certificate[];
  let roots: X509Certificate[];
  try {
    chain = parseCertificates(input.chain, 'tls.crt');
    roots = parseCertificates(input.caBundle, 'caBundle');
  } catch (error) {
    return { problems: [(error as Error).message] };
  }
  const [leaf, ...intermediates] = chain;
  if (!leaf) return { problems: ['tls.crt holds no certificate'] };
  if (roots.length === 0) return { problems: ['the caBundle holds no certificate'] };

  const verdict: ServingCertificateVerdict = {
    problems,
    daysLeft: Math.floor((leaf.validToDate.getTime() - input.now.getTime()) / DAY_MS),
    notAfter: leaf.validToDate,
  };
  const leafValidity = validityProblem(leaf, 'the serving certificate', input.now);
  if (leafValidity) problems.push(leafValidity);
  if (!leaf.checkHost(input.dnsName, { subject: 'never' })) {
    problems.push(`its subjectAltNames (${leaf.subjectAltName ?? 'none'}) do not cover ${input.dnsName}`);
  }
  const usages = leaf.keyUsage;
  if (usages && usages.length > 0 && !usages.includes(SERVER_AUTH) && !usages.includes(ANY_EXTENDED_KEY_USAGE)) {
    problems.push('its extended key usage does not allow serverAuth');
  }
  if (input.key !== undefined) {
    try {
      if (!leaf.checkPrivateKey(createPrivateKey(input.key))) problems.push('tls.key is not the key of tls.crt');
    } catch (error) {
      problems.push(`tls.key cannot be read: ${(error as Error).message}`);
    }
  }
  const found = chainToBundle(leaf, intermediates, roots);
  if ('problem' in found) {
    problems.push(found.problem);
  } else {
    for (const issuer of found.path) {
      const name = `issuer "${certificateName(issuer)}"`;
      if (!issuer.ca) problems.push(`${name} is not a CA certificate`);
      const validity = validityProblem(issuer, name, input.now);
      if (validity) problems.push(validity);
    }
  }
  return verdict;
}
