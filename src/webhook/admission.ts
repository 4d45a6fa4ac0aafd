/**
 * The AdmissionReview `admission.k8s.io/v1` codec: checks what the API server
 * sends and builds what it expects back.
 *
 * `@kubernetes/client-node` has no AdmissionReview model (the API group is
 * never served, only posted to webhooks), so the shapes below follow
 * k8s.io/api/admission/v1 and borrow client-node's types for their parts.
 */
import type { V1Status, V1UserInfo } from '@kubernetes/client-node';
import type { Operation } from 'fast-json-patch';
import { findWorkloadKind, WORKLOAD_KINDS } from '../injector/workloads.ts';
import { isRecord } from '../is-record.ts';

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';
export const ADMISSION_KIND = 'AdmissionReview';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource?: { group: string; version: string; resource: string };
  subResource?: string;
  requestKind?: GroupVersionKind;
  name?: string;
  namespace?: string;
  operation?: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo?: V1UserInfo;
  /**
   * The submitted object; checked to be a JSON object, the injector checks the
   * rest. null only for a DELETE, for which the API server sends `oldObject`.
   */
  object: Record<string, unknown> | null;
  oldObject?: unknown;
  dryRun?: boolean;
  options?: unknown;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: V1Status;
  patchType?: 'JSONPatch';
  /** base64 of the JSON Patch document. */
  patch?: string;
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: typeof ADMISSION_KIND;
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

/** A body that is JSON but not an AdmissionReview leaderhook can answer. */
export class AdmissionDecodeError extends Error {
  override name = 'AdmissionDecodeError';
}

const POD_KIND: GroupVersionKind = { group: '', version: 'v1', kind: 'Pod' };

function isPodKind(kind: Record<string, unknown>): boolean {
  return kind.group === POD_KIND.group && kind.version === POD_KIND.version && kind.kind === POD_KIND.kind;
}

/** "/v1, Kind=Pod ... or a workload ...: apps/v1 Deployment, ...; batch/v1 Job, CronJob", from the one list of workload kinds. */
function describeAcceptedKinds(): string {
  const byGroupVersion = new Map<string, string[]>();
  for (const w of WORKLOAD_KINDS) {
    const groupVersion = `${w.group}/${w.version}`;
    byGroupVersion.set(groupVersion, [...(byGroupVersion.get(groupVersion) ?? []), w.kind]);
  }
  const workloads = [...byGroupVersion].map(([groupVersion, kinds]) => `${groupVersion} ${kinds.join(', ')}`);
  return `/v1, Kind=Pod (mutated) or a workload (warned about): ${workloads.join('; ')}`;
}

const ACCEPTED_KINDS = describeAcceptedKinds();

/** A string from the body as a message quotes it: cut short, so a huge value makes no huge message or log line. */
function shorten(value: string): string {
  return value.length > 60 ? `${value.slice(0, 60)}...` : value;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(shorten(value));
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}

/**
 * request.kind as Go prints a GroupVersionKind ("apps/v1, Kind=Deployment").
 * Members that are not strings are described, never converted with String():
 * an object such as `{"toString": 1}` makes that throw.
 */
function formatKind(kind: Record<string, unknown>): string {
  const member = (value: unknown) => (typeof value === 'string' ? shorten(value) : describe(value));
  const group = typeof kind.group === 'string' && kind.group !== '' ? `${shorten(kind.group)}/` : '';
  return `${group}${member(kind.version)}, Kind=${member(kind.kind)}`;
}

/**
 * Checks a decoded body and returns it as a review with a request the
 * injector can be called on. Every error names the first problem found, in
 * the words of the field path, so `kubectl` users and curl users can fix it.
 */
export function decodeAdmissionReview(body: unknown): AdmissionReview & { request: AdmissionRequest } {
  if (!isRecord(body)) {
    throw new AdmissionDecodeError(`the body must be a JSON object (an AdmissionReview), got ${describe(body)}`);
  }
  if (body.apiVersion === undefined) throw new AdmissionDecodeError('apiVersion is missing');
  if (body.apiVersion !== ADMISSION_API_VERSION) {
    throw new AdmissionDecodeError(`apiVersion must be ${ADMISSION_API_VERSION}, got ${describe(body.apiVersion)}`);
  }
  if (body.kind === undefined) throw new AdmissionDecodeError('kind is missing');
  if (body.kind !== ADMISSION_KIND) {
    throw new AdmissionDecodeError(`kind must be ${ADMISSION_KIND}, got ${describe(body.kind)}`);
  }
  const request = body.request;
  if (request === undefined || request === null) throw new AdmissionDecodeError('request is missing');
  if (!isRecord(request)) throw new AdmissionDecodeError(`request must be an object, got ${describe(request)}`);
  if (request.uid === undefined || request.uid === null) throw new AdmissionDecodeError('request.uid is missing');
  if (typeof request.uid !== 'string' || request.uid === '') {
    throw new AdmissionDecodeError(`request.uid must be a non-empty string, got ${describe(request.uid)}`);
  }
  const kind = request.kind;
  if (kind === undefined || kind === null) throw new AdmissionDecodeError('request.kind is missing');
  if (!isRecord(kind)) throw new AdmissionDecodeError(`request.kind must be an object, got ${describe(kind)}`);
  if (!isPodKind(kind) && findWorkloadKind(kind) === undefined) {
    throw new AdmissionDecodeError(`request.kind must be ${ACCEPTED_KINDS}, got ${formatKind(kind)}`);
  }
  if (request.object === undefined || request.object === null) {
    // A DELETE carries the object in oldObject only; it is answered, not refused.
    if (request.operation !== 'DELETE') throw new AdmissionDecodeError('request.object is missing');
    request.object = null;
  } else if (!isRecord(request.object)) {
    throw new AdmissionDecodeError(`request.object must be an object, got ${describe(request.object)}`);
  } else {
    checkObjectMatchesKind(request.object, kind);
  }
  if (request.dryRun !== undefined && typeof request.dryRun !== 'boolean') {
    throw new AdmissionDecodeError(`request.dryRun must be a boolean, got ${describe(request.dryRun)}`);
  }
  for (const field of ['name', 'namespace', 'operation'] as const) {
    if (request[field] !== undefined && typeof request[field] !== 'string') {
      throw new AdmissionDecodeError(`request.${field} must be a string, got ${describe(request[field])}`);
    }
  }
  return body as unknown as AdmissionReview & { request: AdmissionRequest };
}

/**
 * The API server sends the object in the version of request.kind, so the two
 * agree; a review where they do not was made by hand or by mistake, and
 * answering it would check the object as something it is not. An object
 * without apiVersion or kind is taken to be what request.kind says.
 */
function checkObjectMatchesKind(object: Record<string, unknown>, kind: Record<string, unknown>): void {
  const { apiVersion, kind: objectKind } = object;
  const expectedApiVersion = kind.group === '' ? kind.version : `${String(kind.group)}/${String(kind.version)}`;
  const apiVersionAgrees = apiVersion === undefined || apiVersion === expectedApiVersion;
  const kindAgrees = objectKind === undefined || objectKind === kind.kind;
  if (apiVersionAgrees && kindAgrees) return;
  if (typeof apiVersion === 'string' && typeof objectKind === 'string') {
    const groupVersion = apiVersion.includes('/') ? apiVersion : `/${apiVersion}`;
    throw new AdmissionDecodeError(
      `request.kind must be ${shorten(groupVersion)}, Kind=${shorten(objectKind)} to match request.object, got ${formatKind(kind)}`,
    );
  }
  throw new AdmissionDecodeError(
    `request.object (apiVersion ${describe(apiVersion)}, kind ${describe(objectKind)}) does not match request.kind ${formatKind(kind)}`,
  );
}

function review(response: AdmissionResponse): AdmissionReview {
  return { apiVersion: ADMISSION_API_VERSION, kind: ADMISSION_KIND, response };
}

/** Lets the object in unchanged. The API server shows `warnings` to the client. */
export function allowed(uid: string, warnings: readonly string[] = []): AdmissionReview {
  const response: AdmissionResponse = { uid, allowed: true };
  if (warnings.length > 0) response.warnings = [...warnings];
  return review(response);
}

/**
 * Lets the object in with a JSON Patch applied. Always `allowed: true`: an
 * injector never blocks a pod, and an empty patch is sent as no patch at all.
 */
export function patched(uid: string, patch: readonly Operation[], warnings: readonly string[] = []): AdmissionReview {
  if (patch.length === 0) return allowed(uid, warnings);
  const response: AdmissionResponse = {
    uid,
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
  };
  if (warnings.length > 0) response.warnings = [...warnings];
  return review(response);
}
