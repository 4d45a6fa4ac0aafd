/**
 * Bodies for the webhook's `POST /mutate`, generated with fast-check in named
 * classes, each with the answer the webhook must give (src/webhook/app.ts,
 * admission.ts). The fuzz test (test/unit/webhook/fuzz.test.ts) and the fuzz
 * benchmark (test/bench/webhook-fuzz.bench.ts) send them over HTTPS and judge
 * every answer with `checkAnswer` (review-answers.ts).
 *
 * What the webhook must answer:
 * - 200 to an AdmissionReview v1 with a request uid, a Pod or workload kind
 *   and an object, whatever else it holds (unknown fields, huge strings, deep
 *   nesting, a pod with fields of the wrong type): `allowed: true`, the uid
 *   echoed; a patch for a Pod CREATE that applies to the pod as sent, no
 *   patch for a workload or another operation, and never the internal-error
 *   warning, which would mean the injector threw;
 * - 400 to a body that is not JSON, not a review, a review with a field
 *   missing or of the wrong type, another kind, an empty body, or a body that
 *   does not inflate;
 * - 413 to a body above the limit, as sent or once inflated;
 * - 415 to a Content-Type other than application/json, a charset other than
 *   UTF-8 and UTF-16, or a Content-Encoding the server cannot inflate.
 * Every other answer carries `{"error": "..."}`: a message that names the
 * problem (each body says what it must match) and stays short.
 */
import { brotliCompressSync, constants, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { annotations } from '../../src/annotations.ts';
import { HOOK_CONTAINER_NAME, HOOK_TOKEN_VOLUME_NAME } from '../../src/injector/index.ts';
import { WORKLOAD_KINDS, type WorkloadKind } from '../../src/injector/workloads.ts';

/** Every class of body, and the status the webhook must answer it with. */
export const BODY_CLASSES = {
  /** A Pod CREATE review as the API server sends it, with random names, containers, env, annotations, managedFields. */
  validPod: 200,
  /** A valid Pod review with unknown fields at every level, `__proto__` and `constructor` among their names. */
  unknownFields: 200,
  /** A valid Pod review with one huge string (uid, name, annotation, env value, unknown field), up to exactly the limit. */
  hugeStrings: 200,
  /** A valid Pod review with a deeply nested value in a field nobody reads. */
  deepNesting: 200,
  /** A valid Pod review compressed (gzip, deflate, br, zstd), in UTF-16, with a byte order mark or another spelling of the JSON type. */
  encoded: 200,
  /** A Pod review whose pod has a field the injector reads of the wrong type: answered without a patch, not thrown on. */
  podWrongTypes: 200,
  /** A Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob CREATE or UPDATE, with any template: warnings, never a patch. */
  workload: 200,
  /** A Pod review for another operation than CREATE, a workload's for other than CREATE and UPDATE, a DELETE without object. */
  notCreate: 200,
  /** Bytes that are not JSON: truncated reviews, trailing garbage, JavaScript that JSON is not, binary, unclosed nesting. */
  notJson: 400,
  /** JSON that is no AdmissionReview: a scalar, an array, deep arrays, another object, another review type. */
  notAReview: 400,
  /** A review without apiVersion, kind, request, request.uid, request.kind or (outside a DELETE) request.object. */
  missingFields: 400,
  /** A review with one envelope field of the wrong type or value (apiVersion, kind, request, uid, kind, object, dryRun, name, namespace, operation). */
  wrongTypes: 400,
  /** A review of another kind than Pod and the workloads, or whose object is not of its kind. */
  otherKinds: 400,
  /** No body at all: Content-Length 0, or a chunked body without a byte. */
  emptyBody: 400,
  /** A body in gzip, deflate, br or zstd that does not inflate (truncated, or not compressed at all). */
  corruptEncoding: 400,
  /** More bytes than the limit, as sent (with Content-Length or chunked) or once inflated. */
  oversized: 413,
  /** A valid review sent without Content-Type, as another media type, or in a charset that is neither UTF-8 nor UTF-16. */
  wrongContentType: 415,
  /** A valid review with a Content-Encoding the server cannot inflate. */
  unknownEncoding: 415,
} as const;

export type BodyClass = keyof typeof BODY_CLASSES;

export interface FuzzBody {
  class: BodyClass;
  /** Request headers other than the framing, which `chunked` decides; content-type is among them unless a body goes without. */
  headers: Record<string, string>;
  body: Buffer;
  /** Sent with Transfer-Encoding: chunked (in up to four chunks) instead of Content-Length. */
  chunked: boolean;
  /** 200: the uid the answer must echo. */
  uid?: string;
  /** 200: a patch that applies to the submitted pod and injects it, or no patch. */
  patch?: 'applies' | 'none';
  /** 200 with a patch: the review as JSON text, when `body` is not that text (compressed, UTF-16). */
  review?: string;
  /** Not 200: what the error message must say. */
  message?: RegExp;
}

export interface ArbitraryOptions {
  /** The server's body limit (`--body-limit`): huge bodies stay at or below it, oversized ones go above. */
  bodyLimitBytes: number;
}

const JSON_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json' };
const POD_KIND = { group: '', version: 'v1', kind: 'Pod' };
const POD_RESOURCE = { group: '', version: 'v1', resource: 'pods' };

// ---------------------------------------------------------------------------
// Text and values

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
/** One character of any kind: every code point, and now and then a lone surrogate (which JSON.stringify escapes). */
const anyChar = fc.oneof({ weight: 30, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) }, { weight: 1, arbitrary: loneSurrogate });

function text(maxLength = 16, minLength = 0): fc.Arbitrary<string> {
  return fc.string({ unit: anyChar, minLength, maxLength });
}

const dnsLabel = fc.stringMatching(/^[a-z]([-a-z0-9]{0,14}[a-z0-9])?$/);

/** Keys the webhook or the injector read somewhere: an unknown field never takes one of these names. */
const KNOWN_KEYS = new Set(
  (
    'apiVersion kind request uid object dryRun name namespace operation metadata spec containers initContainers volumes env envFrom ' +
    'annotations labels terminationGracePeriodSeconds hostNetwork template jobTemplate group version ports containerPort'
  ).split(' '),
);

const unknownKey = fc
  .oneof(
    { weight: 4, arbitrary: text(12) },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', '', 'managedFields', 'x-kubernetes') },
  )
  .filter((key) => !KNOWN_KEYS.has(key));

/** Unknown fields: up to `maxKeys` of them, with any JSON value. */
function unknownFields(maxKeys = 3): fc.Arbitrary<Record<string, unknown>> {
  return fc.dictionary(unknownKey, fc.jsonValue({ maxDepth: 2 }), { maxKeys });
}

/** `record` with unknown fields mixed in; the record's own fields win over an unknown one of the same name. */
function withUnknown<T extends object>(record: fc.Arbitrary<T>, extras: boolean): fc.Arbitrary<T> {
  if (!extras) return record;
  return fc.tuple(unknownFields(), record).map(([unknown, known]) => ({ ...unknown, ...known }));
}

/** An object whose conversion to a string throws (`String(value)`, a template literal, `RegExp#test`). */
const stringTrap = fc.constant({ toString: 'not a function', valueOf: 'nor this' });

type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'array' | 'object';

function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value as JsonType;
}

/** A JSON value of none of the `allowed` types (an integer counts as a number). */
function valueNotOf(...allowed: JsonType[]): fc.Arbitrary<unknown> {
  const accepted = new Set<JsonType>(allowed.includes('number') ? [...allowed, 'integer'] : allowed);
  return fc
    .oneof(
      text(8),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
      fc.dictionary(text(6), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
      stringTrap,
    )
    .filter((value) => !accepted.has(jsonTypeOf(value)));
}

/**
 * A string of exactly `bytes` bytes of JSON (quotes excluded), of repeated
 * `unit`: whole code points that JSON writes as they are, so the size is exact.
 */
function stringOfJsonBytes(unit: string, bytes: number): string {
  const unitBytes = Buffer.byteLength(unit);
  const count = Math.floor(bytes / unitBytes);
  return unit.repeat(count) + 'x'.repeat(bytes - count * unitBytes);
}

const hugeUnit = fc.constantFrom('a', 'leaderhook ', 'é', '中文', '😀', '<>&', 'A1b2C3');

/** A size between `min` and `max`, spread evenly over its orders of magnitude, and now and then `max` exactly. */
function sizeBetween(min: number, max: number): fc.Arbitrary<number> {
  if (max <= min) return fc.constant(max);
  return fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min: 0, max: 1000 }).map((f) => Math.round(min * (max / min) ** (f / 1000))) },
    { weight: 1, arbitrary: fc.constant(max) },
  );
}

// ---------------------------------------------------------------------------
// Pods and reviews

const envName = fc.oneof(fc.constantFrom('POD_NAME', 'POD_NAMESPACE', 'POD_UID', 'LOG_LEVEL'), text(12));

function envVar(extras: boolean): fc.Arbitrary<Record<string, unknown>> {
  const fieldRef = fc.record(
    { apiVersion: fc.constant('v1'), fieldPath: fc.constantFrom('metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName') },
    { requiredKeys: ['fieldPath'] },
  );
  return withUnknown(
    fc.oneof(fc.record({ name: envName, value: text() }, { requiredKeys: ['name'] }), fc.record({ name: envName, valueFrom: fc.record({ fieldRef }) })),
    extras,
  );
}

const containerName = dnsLabel.filter((name) => name !== HOOK_CONTAINER_NAME);

function container(extras: boolean): fc.Arbitrary<Record<string, unknown>> {
  return withUnknown(
    fc.record(
      {
        name: containerName,
        image: text(20),
        args: fc.array(text(), { maxLength: 3 }),
        env: fc.array(envVar(extras), { maxLength: 4 }),
        envFrom: fc.array(fc.record({ configMapRef: fc.record({ name: dnsLabel }) }), { maxLength: 2 }),
        resources: fc.record({ requests: fc.record({ cpu: fc.constantFrom('10m', '1'), memory: fc.constantFrom('64Mi', '1Gi') }) }),
        // 8080 and hook-metrics also come as the hook's metrics port and its name: a clash the injector must see
        ports: fc.array(
          fc.record(
            { name: fc.oneof(dnsLabel, fc.constant('hook-metrics')), containerPort: fc.oneof(fc.constant(8080), fc.integer({ min: 1, max: 65535 })) },
            { requiredKeys: ['containerPort'] },
          ),
          { maxLength: 2 },
        ),
      },
      { requiredKeys: ['name', 'image'] },
    ),
    extras,
  );
}

/** Keys that would make the injector leave the pod alone (opt-out, mirror pod): never among the random ones. */
const SKIPPING_KEYS = new Set<string>([annotations.inject, 'kubernetes.io/config.mirror']);

/** The annotations leaderhook reads, with values it takes and values it warns about. */
const leaderhookAnnotations = fc.record(
  {
    [annotations.gracePeriod]: fc.oneof(fc.nat({ max: 1_000_000 }).map(String), text(6)),
    [annotations.hookCpuRequest]: fc.oneof(fc.constantFrom('10m', '1', '0.5', '250m'), text(6)),
    [annotations.hookMemoryLimit]: fc.oneof(fc.constantFrom('64Mi', '1Gi', '128974848'), text(6)),
    [annotations.observe]: fc.constantFrom('true', 'false', 'yes'),
    [annotations.hookMetricsPort]: fc.oneof(fc.constantFrom('8080', '9464', '80', '0', '65536'), fc.integer({ min: 1, max: 65535 }).map(String), text(6)),
    [annotations.lock]: text(),
    [annotations.injected]: fc.constantFrom('0.0.1', '0.1.0'),
  },
  { requiredKeys: [] },
);

const managedFieldsEntry = fc.record({
  manager: text(12),
  operation: fc.constantFrom('Update', 'Apply'),
  apiVersion: fc.constant('v1'),
  time: fc.constant('2026-12-01T10:00:00Z'),
  fieldsType: fc.constant('FieldsV1'),
  // Strings with brackets, quotes and backslashes: what the managedFields scanner must step over.
  fieldsV1: fc.dictionary(fc.oneof(text(8), fc.constantFrom('f:[', 'k:{"name":"x"}', '"]', '\\')), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
});

function podMetadata(extras: boolean): fc.Arbitrary<Record<string, unknown>> {
  return withUnknown(
    fc.record(
      {
        name: text(),
        generateName: text(),
        namespace: text(),
        uid: text(),
        labels: fc.dictionary(
          text(12).filter((key) => !SKIPPING_KEYS.has(key)),
          text(),
          { maxKeys: 3 },
        ),
        annotations: fc
          .tuple(
            fc.dictionary(
              text(20).filter((key) => !SKIPPING_KEYS.has(key)),
              text(),
              { maxKeys: 3 },
            ),
            leaderhookAnnotations,
          )
          .map(([random, ours]) => ({ ...random, ...ours })),
        managedFields: fc.array(managedFieldsEntry, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
    extras,
  );
}

function podSpec(extras: boolean, maxContainers = 4): fc.Arbitrary<Record<string, unknown>> {
  return withUnknown(
    fc.record(
      {
        containers: fc.array(container(extras), { minLength: 1, maxLength: maxContainers }),
        initContainers: fc.array(container(extras), { maxLength: 2 }),
        volumes: fc.array(fc.record({ name: dnsLabel.filter((name) => name !== HOOK_TOKEN_VOLUME_NAME), emptyDir: fc.constant({}) }), { maxLength: 3 }),
        terminationGracePeriodSeconds: fc.nat({ max: 1_000_000 }),
        hostNetwork: fc.boolean(),
        serviceAccountName: dnsLabel,
        automountServiceAccountToken: fc.boolean(),
      },
      { requiredKeys: ['containers'] },
    ),
    extras,
  );
}

interface PodShape {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  spec: Record<string, unknown>;
}

function pod(extras: boolean, maxContainers = 4): fc.Arbitrary<PodShape> {
  return withUnknown(
    fc.record(
      { apiVersion: fc.constant('v1'), kind: fc.constant('Pod'), metadata: podMetadata(extras), spec: podSpec(extras, maxContainers) },
      { requiredKeys: ['spec'] },
    ),
    extras,
  );
}

interface Review {
  apiVersion: unknown;
  kind: unknown;
  request: Record<string, unknown>;
  [field: string]: unknown;
}

/** The request fields around the object, as the API server sends them; `uid`, `kind` and `operation` are the caller's. */
function requestFields(extras: boolean): fc.Arbitrary<Record<string, unknown>> {
  return withUnknown(
    fc.record(
      {
        name: text(),
        namespace: text(),
        userInfo: fc.record({ username: text(), uid: text(), groups: fc.array(text(), { maxLength: 3 }) }),
        dryRun: fc.boolean(),
        options: fc.constant({ apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' }),
        oldObject: fc.constant(null),
      },
      { requiredKeys: [] },
    ),
    extras,
  );
}

const uidArb = text(40, 1);

function podReview(options: { extras?: boolean; maxContainers?: number } = {}): fc.Arbitrary<Review> {
  const extras = options.extras ?? false;
  return fc
    .record({
      uid: uidArb,
      fields: requestFields(extras),
      operation: fc.constantFrom<string | undefined>('CREATE', undefined),
      object: pod(extras, options.maxContainers),
      top: extras ? unknownFields() : fc.constant({}),
    })
    .map(({ uid, fields, operation, object, top }) => ({
      ...top,
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        ...fields,
        uid,
        kind: POD_KIND,
        resource: POD_RESOURCE,
        requestKind: POD_KIND,
        ...(operation === undefined ? {} : { operation }),
        object,
      },
    }));
}

/** A workload object of `kind` with `template` where its kind keeps the pod template (absent when undefined). */
function workloadObject(kind: WorkloadKind, template: unknown, typeMeta: boolean): Record<string, unknown> {
  const object: Record<string, unknown> = typeMeta ? { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind } : {};
  object.metadata = { name: 'workload', namespace: 'operators' };
  if (template === undefined) return object;
  let at = object;
  for (const key of kind.templatePath.slice(0, -1)) {
    const next: Record<string, unknown> = {};
    at[key] = next;
    at = next;
  }
  at[kind.templatePath.at(-1)!] = template;
  return object;
}

function workloadReview(operations: fc.Arbitrary<string | undefined>): fc.Arbitrary<Review> {
  const podTemplate = fc.record({ metadata: podMetadata(false), spec: podSpec(false) }, { requiredKeys: ['spec'] });
  // A template with a field of the wrong type where the injector reads: no warnings, and no internal error either.
  const brokenTemplate = fc.tuple(podTemplate, fc.constantFrom(...POD_FIELD_BREAKERS), fc.nat()).chain(([template, breaker, index]) =>
    valueNotOf(...breaker.allowed).map((value) => {
      const broken = copy(template);
      breaker.set(broken, value, index);
      return broken;
    }),
  );
  const template = fc.oneof(
    { weight: 4, arbitrary: podTemplate },
    { weight: 1, arbitrary: brokenTemplate },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  return fc
    .record({ uid: uidArb, kind: fc.constantFrom(...WORKLOAD_KINDS), template, typeMeta: fc.boolean(), operation: operations, fields: requestFields(false) })
    .map(({ uid, kind, template, typeMeta, operation, fields }) => ({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        ...fields,
        uid,
        kind: { group: kind.group, version: kind.version, kind: kind.kind },
        resource: { group: kind.group, version: kind.version, resource: kind.resource },
        ...(operation === undefined ? {} : { operation }),
        object: workloadObject(kind, template, typeMeta),
      },
    }));
}

// ---------------------------------------------------------------------------
// Turning reviews into bodies

/** JSON as the API server writes it (compact), or indented, which the managedFields scanner must also read. */
const indent = fc.constantFrom<number | string>(0, 0, 0, 1, 2, '\t');

/** How fast-check prints a body it reports: its class, headers and framing, and the start and end of its text. */
function describeBody(this: FuzzBody): string {
  const text = this.body.toString('utf8');
  const shown = text.length > 400 ? `${text.slice(0, 200)} [... ${text.length - 400} more characters ...] ${text.slice(-200)}` : text;
  const framing = this.chunked ? 'chunked' : `Content-Length ${this.body.length}`;
  return `${this.class} body (${framing}, ${JSON.stringify(this.headers)}): ${JSON.stringify(shown)}`;
}

/** A body, printed readably in fast-check's reports. */
function fuzzBody(fields: FuzzBody): FuzzBody {
  return Object.defineProperty(fields, fc.toStringMethod, { value: describeBody, enumerable: false });
}

function answeredBody(cls: BodyClass, review: Review, spacing: number | string, chunked: boolean, patch: 'applies' | 'none'): FuzzBody {
  const body = Buffer.from(JSON.stringify(review, null, spacing));
  return fuzzBody({ class: cls, headers: { ...JSON_HEADERS }, body, chunked, uid: review.request.uid as string, patch });
}

function refusedBody(cls: BodyClass, body: Buffer | string, message: RegExp, headers: Record<string, string> = JSON_HEADERS, chunked = false): FuzzBody {
  return fuzzBody({ class: cls, headers: { ...headers }, body: Buffer.isBuffer(body) ? body : Buffer.from(body), chunked, message });
}

/** Mostly Content-Length, as the API server sends; a quarter chunked. */
const chunkedFraming = fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });

/** `body` keeps only what is at or below the limit: a class answered 200 must not be oversized by chance. */
function withinLimit(arbitrary: fc.Arbitrary<FuzzBody>, limit: number): fc.Arbitrary<FuzzBody> {
  return arbitrary.filter((b) => b.body.length <= limit);
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

// ---------------------------------------------------------------------------
// The classes

function validPods(): fc.Arbitrary<FuzzBody> {
  return fc.tuple(podReview(), indent, chunkedFraming).map(([review, spacing, chunked]) => answeredBody('validPod', review, spacing, chunked, 'applies'));
}

function unknownFieldPods(): fc.Arbitrary<FuzzBody> {
  return fc
    .tuple(podReview({ extras: true }), indent, chunkedFraming)
    .map(([review, spacing, chunked]) => answeredBody('unknownFields', review, spacing, chunked, 'applies'));
}

/** Where a huge string or a deep value goes in a pod review. */
type Placement = (review: Review, value: unknown) => void;

const PLACEMENTS: Record<string, Placement> = {
  uid: (review, value) => {
    review.request.uid = value;
  },
  name: (review, value) => {
    review.request.name = value;
  },
  podName: (review, value) => {
    objectOf(review).metadata = { ...objectOf(review).metadata, name: value };
  },
  annotation: (review, value) => {
    const metadata = objectOf(review).metadata ?? {};
    metadata.annotations = { ...(metadata.annotations as object | undefined), 'example.com/huge': value };
    objectOf(review).metadata = metadata;
  },
  envValue: (review, value) => {
    const first = (objectOf(review).spec.containers as Array<Record<string, unknown>>)[0]!;
    first.env = [...((first.env as unknown[] | undefined) ?? []), { name: 'HUGE', value }];
  },
  unknownTop: (review, value) => {
    review['x-unknown'] = value;
  },
  unknownSpec: (review, value) => {
    objectOf(review).spec['x-unknown'] = value;
  },
  unknownContainer: (review, value) => {
    (objectOf(review).spec.containers as Array<Record<string, unknown>>)[0]!['x-unknown'] = value;
  },
  managedFields: (review, value) => {
    const metadata = objectOf(review).metadata ?? {};
    metadata.managedFields = [{ manager: 'fuzz', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:x': value } }];
    objectOf(review).metadata = metadata;
  },
};

/** Placements where only a string is a valid value (a uid, a name, an annotation, an env value). */
const STRING_PLACEMENTS = ['uid', 'name', 'podName', 'annotation', 'envValue'];

/**
 * A deep copy of a generated value, to change: fast-check hands the same
 * value to several candidates while it shrinks, so changing it in place
 * would leak into them. A JSON copy keeps own `__proto__` keys as keys.
 */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function objectOf(review: Review): PodShape {
  return review.request.object as PodShape;
}

/** Serializes `review` with a placeholder where `placement` puts a value, and returns the text before and after it. */
function splitAt(review: Review, placement: string): [string, string] {
  const marker = '\u0000fuzz-placeholder\u0000';
  const placed = copy(review);
  PLACEMENTS[placement]!(placed, marker);
  const text = JSON.stringify(placed);
  const quoted = JSON.stringify(marker);
  const at = text.indexOf(quoted);
  return [text.slice(0, at), text.slice(at + quoted.length)];
}

function hugeStringPods(limit: number): fc.Arbitrary<FuzzBody> {
  return fc
    .record({
      review: podReview({ maxContainers: 2 }),
      placement: fc.constantFrom(...Object.keys(PLACEMENTS)),
      unit: hugeUnit,
      size: sizeBetween(Math.min(16 * 1024, limit / 4), limit),
      chunked: chunkedFraming,
    })
    .map(({ review, placement, unit, size, chunked }) => {
      const [before, after] = splitAt(review, placement);
      const huge = stringOfJsonBytes(unit, Math.max(1, size - Buffer.byteLength(before) - Buffer.byteLength(after) - 2));
      const body = Buffer.from(`${before}${JSON.stringify(huge)}${after}`);
      const uid = placement === 'uid' ? huge : (review.request.uid as string);
      return fuzzBody({ class: 'hugeStrings', headers: { ...JSON_HEADERS }, body, chunked, uid, patch: 'applies' });
    });
}

/** JSON text nested `depth` levels deep: arrays (2 bytes a level), objects (6 bytes a level) or both in turn. */
function deepJson(depth: number, shape: 'arrays' | 'objects' | 'mixed'): string {
  if (shape === 'arrays') return `${'['.repeat(depth)}${']'.repeat(depth)}`;
  if (shape === 'objects') return `${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}`;
  const pairs = Math.floor(depth / 2);
  return `${'[{"a":'.repeat(pairs)}0${'}]'.repeat(pairs)}`;
}

const BYTES_PER_LEVEL = { arrays: 2, objects: 6, mixed: 4 } as const;

/** Deeper than anything the API server sends (Go's encoding/json stops at 10,000), as deep as the limit allows up to this. */
const MAX_DEPTH = 200_000;

function deepNestingPods(limit: number): fc.Arbitrary<FuzzBody> {
  const placements = Object.keys(PLACEMENTS).filter((p) => !STRING_PLACEMENTS.includes(p));
  return fc
    .record({
      review: podReview({ maxContainers: 2 }),
      placement: fc.constantFrom(...placements),
      shape: fc.constantFrom<'arrays' | 'objects' | 'mixed'>('arrays', 'objects', 'mixed'),
      fraction: fc.integer({ min: 0, max: 1000 }),
      chunked: chunkedFraming,
    })
    .map(({ review, placement, shape, fraction, chunked }) => {
      const uid = review.request.uid as string;
      const [before, after] = splitAt(review, placement);
      const room = limit - Buffer.byteLength(before) - Buffer.byteLength(after) - 8;
      const most = Math.max(2, Math.min(MAX_DEPTH, Math.floor(room / BYTES_PER_LEVEL[shape])));
      const depth = Math.max(2, Math.round(most ** (fraction / 1000)));
      const body = Buffer.from(`${before}${deepJson(depth, shape)}${after}`);
      return fuzzBody({ class: 'deepNesting', headers: { ...JSON_HEADERS }, body, chunked, uid, patch: 'applies' });
    });
}

type Encoding = { contentEncoding?: string; charset?: string; contentType?: string; bom?: boolean };

const ENCODINGS: readonly Encoding[] = [
  { contentEncoding: 'gzip' },
  { contentEncoding: 'GZIP' },
  { contentEncoding: 'deflate' },
  { contentEncoding: 'br' },
  { contentEncoding: 'zstd' },
  { contentEncoding: 'identity' },
  { charset: 'utf-16le' },
  { charset: 'utf-16be' },
  { charset: 'utf-16' },
  { charset: '"UTF-16LE"' },
  { charset: 'utf-16le', contentEncoding: 'gzip' },
  { bom: true },
  { contentType: 'application/json; charset=utf-8' },
  { contentType: 'Application/JSON' },
  { contentType: 'application/json;charset="UTF-8"' },
  { contentType: 'application/json ; charset=utf-8 ; q=1' },
];

function compress(contentEncoding: string, bytes: Buffer): Buffer {
  switch (contentEncoding.toLowerCase()) {
    case 'gzip':
      return gzipSync(bytes);
    case 'deflate':
      return deflateSync(bytes);
    case 'br':
      // Quality 11, brotli's default, takes seconds for a few megabytes.
      return brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } });
    case 'zstd':
      return zstdCompressSync(bytes);
    case 'identity':
      return bytes;
  }
  throw new Error(`no compressor for ${contentEncoding}`);
}

function encodeText(text: string, charset: string | undefined): Buffer {
  const name = charset?.replaceAll('"', '').toLowerCase();
  if (name === undefined || name === 'utf-8') return Buffer.from(text);
  const le = Buffer.from(text, 'utf16le');
  return name === 'utf-16be' ? le.swap16() : le;
}

function encodedPods(): fc.Arbitrary<FuzzBody> {
  return fc.tuple(podReview(), fc.constantFrom(...ENCODINGS), chunkedFraming).map(([review, encoding, chunked]) => {
    const text = JSON.stringify(review);
    let body = encodeText(text, encoding.charset);
    if (encoding.bom) body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]);
    if (encoding.contentEncoding) body = compress(encoding.contentEncoding, body);
    const headers: Record<string, string> = {
      'content-type': encoding.contentType ?? (encoding.charset ? `application/json; charset=${encoding.charset}` : 'application/json'),
    };
    if (encoding.contentEncoding) headers['content-encoding'] = encoding.contentEncoding;
    return fuzzBody({ class: 'encoded', headers, body, chunked, uid: review.request.uid as string, patch: 'applies', review: text });
  });
}

/**
 * A field the injector reads, and the types a Pod gives it (null stands for
 * absent where the injector treats it so). Each changes one such field of a
 * valid pod to a value of another type.
 */
const POD_FIELD_BREAKERS: ReadonlyArray<{ field: string; allowed: JsonType[]; set: (pod: PodShape, value: unknown, index: number) => void }> = [
  {
    field: 'metadata',
    allowed: ['object', 'null'],
    set: (p, v) => {
      p.metadata = v as Record<string, unknown>;
    },
  },
  {
    field: 'metadata.annotations',
    allowed: ['object', 'null'],
    set: (p, v) => {
      p.metadata = { ...p.metadata, annotations: v };
    },
  },
  {
    field: 'metadata.annotations[key]',
    allowed: ['string'],
    set: (p, v, i) => {
      const keys = [annotations.gracePeriod, annotations.hookCpuRequest, annotations.hookMemoryLimit, annotations.injected, 'example.com/any'];
      p.metadata = { ...p.metadata, annotations: { ...(p.metadata?.annotations as object | undefined), [keys[i % keys.length]!]: v } };
    },
  },
  {
    field: 'spec',
    allowed: ['object'],
    set: (p, v) => {
      p.spec = v as Record<string, unknown>;
    },
  },
  {
    field: 'spec.containers',
    allowed: ['array'],
    set: (p, v) => {
      p.spec.containers = v;
    },
  },
  {
    field: 'spec.containers[i]',
    allowed: ['object'],
    set: (p, v, i) => {
      containersOf(p)[i % containersOf(p).length] = v as Record<string, unknown>;
    },
  },
  {
    field: 'spec.containers[i].name',
    allowed: ['string', 'null'],
    set: (p, v, i) => {
      containersOf(p)[i % containersOf(p).length]!.name = v;
    },
  },
  {
    field: 'spec.containers[i].env',
    allowed: ['array', 'null'],
    set: (p, v, i) => {
      containersOf(p)[i % containersOf(p).length]!.env = v;
    },
  },
  {
    field: 'spec.containers[i].env[j]',
    allowed: ['object'],
    set: (p, v, i) => {
      const c = containersOf(p)[i % containersOf(p).length]!;
      c.env = [...((c.env as unknown[] | undefined) ?? []), v];
    },
  },
  {
    field: 'spec.containers[i].envFrom',
    allowed: ['array', 'null'],
    set: (p, v, i) => {
      containersOf(p)[i % containersOf(p).length]!.envFrom = v;
    },
  },
  {
    field: 'spec.initContainers',
    allowed: ['array', 'null'],
    set: (p, v) => {
      p.spec.initContainers = v;
    },
  },
  {
    field: 'spec.initContainers[i]',
    allowed: ['object'],
    set: (p, v) => {
      p.spec.initContainers = [...((p.spec.initContainers as unknown[]) ?? []), v];
    },
  },
  {
    field: 'spec.initContainers[i].name',
    allowed: ['string', 'null'],
    set: (p, v) => {
      p.spec.initContainers = [{ name: v, image: 'init' }];
    },
  },
  {
    field: 'spec.volumes',
    allowed: ['array', 'null'],
    set: (p, v) => {
      p.spec.volumes = v;
    },
  },
  {
    field: 'spec.volumes[i]',
    allowed: ['object'],
    set: (p, v) => {
      p.spec.volumes = [...((p.spec.volumes as unknown[]) ?? []), v];
    },
  },
  {
    field: 'spec.volumes[i].name',
    allowed: ['string', 'null'],
    set: (p, v) => {
      p.spec.volumes = [{ name: v, emptyDir: {} }];
    },
  },
  {
    field: 'spec.terminationGracePeriodSeconds',
    allowed: ['integer', 'null'],
    set: (p, v) => {
      p.spec.terminationGracePeriodSeconds = v;
    },
  },
];

function containersOf(pod: PodShape): Array<Record<string, unknown>> {
  return pod.spec.containers as Array<Record<string, unknown>>;
}

function podsWithWrongTypes(): fc.Arbitrary<FuzzBody> {
  return fc
    .record({ review: podReview(), breaker: fc.constantFrom(...POD_FIELD_BREAKERS), index: fc.nat(), chunked: chunkedFraming })
    .chain(({ review, breaker, index, chunked }) =>
      valueNotOf(...breaker.allowed).map((value) => {
        const broken = copy(review);
        breaker.set(objectOf(broken), value, index);
        return answeredBody('podWrongTypes', broken, 0, chunked, 'none');
      }),
    );
}

function workloads(): fc.Arbitrary<FuzzBody> {
  return fc
    .tuple(workloadReview(fc.constantFrom<string | undefined>('CREATE', 'UPDATE', undefined)), chunkedFraming)
    .map(([review, chunked]) => answeredBody('workload', review, 0, chunked, 'none'));
}

function otherOperations(): fc.Arbitrary<FuzzBody> {
  const notCreate = fc.oneof(fc.constantFrom('UPDATE', 'DELETE', 'CONNECT'), text(8)).filter((op) => op !== 'CREATE');
  const notCreateOrUpdate = fc.oneof(fc.constantFrom('DELETE', 'CONNECT'), text(8)).filter((op) => op !== 'CREATE' && op !== 'UPDATE');
  const podOps = fc.tuple(podReview(), notCreate).map(([review, operation]) => ({ ...review, request: { ...review.request, operation } }));
  const deleteWithoutObject = fc.tuple(fc.oneof(podReview(), workloadReview(fc.constant('DELETE'))), fc.boolean()).map(([review, asNull]) => {
    const { object, ...request } = review.request;
    return { ...review, request: { ...request, operation: 'DELETE', oldObject: object, ...(asNull ? { object: null } : {}) } };
  });
  return fc
    .tuple(fc.oneof(podOps, workloadReview(notCreateOrUpdate), deleteWithoutObject), chunkedFraming)
    .map(([review, chunked]) => answeredBody('notCreate', review, 0, chunked, 'none'));
}

const NOT_JSON = /^the request body is not valid JSON: /;

/** Changes to a review's text that make it JavaScript, or JSON5, but not JSON. */
const NOT_JSON_EDITS: ReadonlyArray<(text: string) => string> = [
  (t) => t.replace('"admission.k8s.io/v1"', "'admission.k8s.io/v1'"),
  (t) => t.replace('"apiVersion"', 'apiVersion'),
  (t) => t.replace('{', '{/* a comment */'),
  (t) => `// a comment\n${t}`,
  (t) => `${t.slice(0, -1)},}`,
  (t) => t.replace('"request":{', '"request":{"timeout":NaN,'),
  (t) => t.replace('"request":{', '"request":{"timeout":Infinity,'),
  (t) => t.replace('"request":{', '"request":{"timeout":undefined,'),
  (t) => t.replace('"request":{', '"request":{"timeout":0x10,'),
  (t) => t.replace('"request":{', '"request":{"timeout":+1,'),
  (t) => t.replace('"request":{', '"request":{"timeout":01,'),
  (t) => t.replace('"request":{', '"request":{"tab":"a\tb",'),
  (t) => t.replace('"request":{', '"request":{"escape":"\\x41",'),
  (t) => t.replaceAll('"', '\\"'),
];

/** A first byte no JSON text starts with, after whitespace (0xEF is left out: it starts a byte order mark). */
const notJsonStart = fc.oneof(
  fc.constantFrom(..."abcdeghijklmopqrsuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ}]),:;=<>#%&*/\\'`~!?@^|".split('').map((c) => c.charCodeAt(0))),
  fc.integer({ min: 0x00, max: 0x08 }),
  fc.integer({ min: 0x80, max: 0xee }),
  fc.integer({ min: 0xf0, max: 0xff }),
);

function notJson(limit: number): fc.Arbitrary<FuzzBody> {
  const review = podReview().map((r) => JSON.stringify(r));
  const truncated = fc.tuple(review, fc.nat()).map(([t, n]) => t.slice(0, 1 + (n % (t.length - 1))));
  const trailing = fc
    .tuple(
      review,
      fc.oneof(
        fc.constantFrom('}', ']', 'x', ',', '{}', '\u0000', 'null'),
        text(8, 1).filter((s) => !/^\s/.test(s)),
      ),
    )
    .map(([t, garbage]) => `${t}${garbage}`);
  const edited = fc.tuple(review, fc.constantFrom(...NOT_JSON_EDITS)).map(([t, edit]) => edit(t));
  const binary = fc
    .tuple(fc.constantFrom('', ' ', '\n\t '), notJsonStart, fc.uint8Array({ maxLength: 512 }))
    .map(([space, first, rest]) => Buffer.concat([Buffer.from(space), Buffer.from([first]), rest]));
  const unclosed = fc
    .tuple(fc.constantFrom('[', '{"a":', '[{"b":'), fc.integer({ min: 1, max: Math.floor(limit / 8) }))
    .map(([open, depth]) => open.repeat(Math.max(1, Math.floor(depth / open.length))));
  const utf16WithoutCharset = review.map((t) => Buffer.from(t, 'utf16le'));
  return fc
    .oneof(truncated, trailing, edited, binary, unclosed, utf16WithoutCharset)
    .map((body) => refusedBody('notJson', body, NOT_JSON))
    .filter((b) => b.body.length > 0 && b.body.length <= limit);
}

function notAReview(limit: number): fc.Arbitrary<FuzzBody> {
  const notObject = /^the body must be a JSON object \(an AdmissionReview\), got /;
  const scalarsAndArrays = fc
    .jsonValue({ maxDepth: 3 })
    .filter((v) => jsonTypeOf(v) !== 'object')
    .map((v) => refusedBody('notAReview', JSON.stringify(v), notObject));
  const deepArrays = fc
    .integer({ min: 1, max: Math.min(MAX_DEPTH, Math.floor(limit / 2) - 1) })
    .map((depth) => refusedBody('notAReview', deepJson(depth, 'arrays'), notObject));
  const otherObjects = fc
    .dictionary(
      text(10).filter((k) => k !== 'apiVersion'),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 5 },
    )
    .map((v) => refusedBody('notAReview', JSON.stringify(v), /^apiVersion is missing$/));
  const otherReviews = fc
    .constantFrom(
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview' },
      { apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview' },
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview' },
      { apiVersion: 'admission.k8s.io/v1', kind: 'ConversionReview' },
    )
    .chain((head) =>
      podReview().map((r) =>
        refusedBody('notAReview', JSON.stringify({ ...r, ...head }), head.apiVersion === 'admission.k8s.io/v1' ? /^kind must be / : /^apiVersion must be /),
      ),
    );
  return fc.oneof(scalarsAndArrays, deepArrays, otherObjects, otherReviews);
}

function missingFields(): fc.Arbitrary<FuzzBody> {
  const fields = ['apiVersion', 'kind', 'request', 'request.uid', 'request.kind', 'request.object'] as const;
  return fc.tuple(podReview({ extras: true }), fc.constantFrom(...fields), fc.boolean()).map(([generated, field, asNull]) => {
    const review = copy(generated);
    const [parent, key] = field.startsWith('request.') ? [review.request, field.slice('request.'.length)] : [review as Record<string, unknown>, field];
    // null is missing too, except for apiVersion and kind, where it is a value of the wrong type.
    if (asNull && field !== 'apiVersion' && field !== 'kind') parent[key] = null;
    else delete parent[key];
    return refusedBody('missingFields', JSON.stringify(review), new RegExp(`^${escapeRegExp(field)} is missing$`));
  });
}

/** A huge string: where a message quotes a value, it must quote it cut short. */
function hugeText(limit: number): fc.Arbitrary<string> {
  return fc.tuple(hugeUnit, fc.integer({ min: 1024, max: Math.max(1024, Math.floor(limit / 4)) })).map(([unit, bytes]) => stringOfJsonBytes(unit, bytes));
}

function wrongTypes(limit: number): fc.Arbitrary<FuzzBody> {
  const huge = hugeText(limit);
  const fields: ReadonlyArray<[string, fc.Arbitrary<unknown>, RegExp]> = [
    ['apiVersion', fc.oneof(valueNotOf('string'), text(), huge).filter((v) => v !== 'admission.k8s.io/v1'), /^apiVersion must be admission\.k8s\.io\/v1, got /],
    ['kind', fc.oneof(valueNotOf('string'), text(), huge).filter((v) => v !== 'AdmissionReview'), /^kind must be AdmissionReview, got /],
    ['request', valueNotOf('object', 'null'), /^request must be an object, got /],
    ['request.uid', fc.oneof(valueNotOf('string', 'null'), fc.constant('')), /^request\.uid must be a non-empty string, got /],
    ['request.kind', valueNotOf('object', 'null'), /^request\.kind must be an object, got /],
    ['request.object', valueNotOf('object', 'null'), /^request\.object must be an object, got /],
    ['request.dryRun', valueNotOf('boolean'), /^request\.dryRun must be a boolean, got /],
    ['request.name', valueNotOf('string'), /^request\.name must be a string, got /],
    ['request.namespace', valueNotOf('string'), /^request\.namespace must be a string, got /],
    ['request.operation', valueNotOf('string'), /^request\.operation must be a string, got /],
  ];
  return fc
    .tuple(podReview(), fc.constantFrom(...fields))
    .chain(([review, [field, values, message]]) =>
      values.map((value) => {
        const requestField = field.startsWith('request.') ? field.slice('request.'.length) : undefined;
        const broken = requestField === undefined ? { ...review, [field]: value } : { ...review, request: { ...review.request, [requestField]: value } };
        return refusedBody('wrongTypes', JSON.stringify(broken), message);
      }),
    )
    .filter((b) => b.body.length <= limit);
}

function isAcceptedKind(kind: Record<string, unknown>): boolean {
  const accepted = [POD_KIND, ...WORKLOAD_KINDS];
  return accepted.some((k) => k.group === kind.group && k.version === kind.version && k.kind === kind.kind);
}

function otherKinds(limit: number): fc.Arbitrary<FuzzBody> {
  const member = fc.oneof({ weight: 3, arbitrary: text(12) }, { weight: 1, arbitrary: valueNotOf('string') }, { weight: 1, arbitrary: hugeText(limit) });
  const nearMisses = fc.constantFrom(
    { group: '', version: 'v1beta1', kind: 'Pod' },
    { group: 'core', version: 'v1', kind: 'Pod' },
    { group: '', version: 'v1', kind: 'pod' },
    { group: 'apps', version: 'v1', kind: 'Pod' },
    { group: '', version: 'v1', kind: 'Service' },
    { group: '', version: 'v1', kind: 'ConfigMap' },
    { group: '', version: 'v1', kind: 'PodTemplate' },
    { group: 'apps', version: 'v1beta2', kind: 'Deployment' },
    { group: 'batch', version: 'v1beta1', kind: 'CronJob' },
    { version: 'v1', kind: 'Pod' },
    {},
  );
  const randomKinds = fc.record({ group: member, version: member, kind: member }, { requiredKeys: [] });
  const wrongKind = fc
    .tuple(
      podReview(),
      fc.oneof(nearMisses, randomKinds).filter((k) => !isAcceptedKind(k as Record<string, unknown>)),
    )
    .map(([review, kind]) => {
      return refusedBody(
        'otherKinds',
        JSON.stringify({ ...review, request: { ...review.request, kind } }),
        /^request\.kind must be \/v1, Kind=Pod \(mutated\) or a workload \(warned about\): .*, got /s,
      );
    });
  const mismatched = fc
    .tuple(
      podReview(),
      fc.constantFrom({ apiVersion: 'apps/v1', kind: 'Deployment' }, { apiVersion: 'v1', kind: 'Service' }, { kind: 'Deployment' }, { apiVersion: 'v2' }),
    )
    .map(([review, typeMeta]) => {
      const { apiVersion, kind, ...rest } = objectOf(review);
      return refusedBody(
        'otherKinds',
        JSON.stringify({ ...review, request: { ...review.request, object: { ...rest, ...typeMeta } } }),
        /^request\.kind must be .* to match request\.object, got |^request\.object \(apiVersion .*\) does not match request\.kind /,
      );
    });
  return fc.oneof(wrongKind, mismatched).filter((b) => b.body.length <= limit);
}

function emptyBodies(): fc.Arbitrary<FuzzBody> {
  // Without a byte and without framing, the body is refused as empty before its type is looked at; a chunked one is read first.
  const contentLengthZero = fc
    .constantFrom<Record<string, string>>(JSON_HEADERS, {}, { 'content-type': 'text/plain' })
    .map((headers) => refusedBody('emptyBody', Buffer.alloc(0), /^the request body is empty/, headers));
  const emptyChunked = fc.constant(refusedBody('emptyBody', Buffer.alloc(0), /^the request body is empty/, JSON_HEADERS, true));
  return fc.oneof(contentLengthZero, emptyChunked);
}

const COMPRESSIONS = ['gzip', 'deflate', 'br', 'zstd'] as const;

function corruptEncodings(): fc.Arbitrary<FuzzBody> {
  const truncated = fc.tuple(podReview(), fc.constantFrom(...COMPRESSIONS), fc.nat()).map(([review, encoding, cut]) => {
    const compressed = compress(encoding, Buffer.from(JSON.stringify(review)));
    return [encoding, compressed.subarray(0, 1 + (cut % (compressed.length - 1)))] as const;
  });
  // gzip starts with 0x1f 0x8b, zlib's deflate with 0x78, zstd with 0x28 0xb5 0x2f 0xfd: these bytes never do.
  const notCompressed = fc
    .tuple(fc.constantFrom<(typeof COMPRESSIONS)[number]>('gzip', 'deflate', 'zstd'), fc.uint8Array({ minLength: 1, maxLength: 256 }))
    .map(([encoding, bytes]) => [encoding, Buffer.concat([Buffer.from('{"apiVersion":'), bytes])] as const);
  return fc
    .tuple(fc.oneof(truncated, notCompressed), chunkedFraming)
    .map(([[encoding, body], chunked]) =>
      refusedBody(
        'corruptEncoding',
        body,
        new RegExp(`^the request body could not be decompressed \\(Content-Encoding: ${encoding}\\): `),
        { ...JSON_HEADERS, 'content-encoding': encoding },
        chunked,
      ),
    );
}

function oversized(limit: number): fc.Arbitrary<FuzzBody> {
  const tooLarge = new RegExp(`^the request body is larger than the limit of ${limit} bytes$`);
  const size = fc.integer({ min: limit + 1, max: limit + Math.min(limit, 256 * 1024) });
  const padded = fc.tuple(podReview(), hugeUnit, size).map(([review, unit, bytes]) => {
    const [before, after] = splitAt(review, 'annotation');
    const padding = stringOfJsonBytes(unit, Math.max(1, bytes - Buffer.byteLength(before) - Buffer.byteLength(after) - 2));
    return Buffer.from(`${before}${JSON.stringify(padding)}${after}`);
  });
  const sent = fc
    .tuple(
      fc.oneof(
        padded,
        size.map((bytes) => Buffer.alloc(bytes, '[1,')),
      ),
      chunkedFraming,
    )
    .map(([body, chunked]) => refusedBody('oversized', body, tooLarge, JSON_HEADERS, chunked));
  // A few kilobytes on the wire that inflate beyond the limit.
  const inflated = fc
    .tuple(padded, fc.constantFrom<(typeof COMPRESSIONS)[number]>('gzip', 'deflate', 'br'))
    .map(([body, encoding]) => refusedBody('oversized', compress(encoding, body), tooLarge, { ...JSON_HEADERS, 'content-encoding': encoding }));
  return fc.oneof({ weight: 3, arbitrary: sent }, { weight: 1, arbitrary: inflated });
}

/** Printable ASCII: what a client can put in a header. */
const headerText = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 });

const JSON_CHARSETS = new Set(['utf-8', 'utf-16', 'utf-16le', 'utf-16be']);

function wrongContentTypes(): fc.Arbitrary<FuzzBody> {
  const otherType = fc
    .oneof(
      fc.constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/octet-stream',
        'application/yaml',
        'application/json-patch+json',
        'application/merge-patch+json',
        'application/vnd.kubernetes.protobuf',
        'multipart/form-data; boundary=x',
        'text/json',
        'application/jsonl',
        'application/json, text/plain',
        '*/*',
        'json',
        '',
      ),
      headerText,
    )
    .filter((type) => type.split(';')[0]!.trim().toLowerCase() !== 'application/json')
    .map((type) => [{ 'content-type': type }, /^Content-Type must be application\/json, got /] as const);
  const otherCharset = fc
    .oneof(fc.constantFrom('latin1', 'iso-8859-1', 'us-ascii', 'utf-32', 'utf-7', 'windows-1252', 'utf8', 'ucs-2'), dnsLabel)
    .filter((charset) => !JSON_CHARSETS.has(charset))
    .map((charset) => [{ 'content-type': `application/json; charset=${charset}` }, /^unsupported charset "/] as const);
  const none = fc.constant([{}, /^Content-Type is missing; it must be application\/json$/] as const);
  return fc
    .tuple(podReview(), fc.oneof(otherType, otherCharset, none))
    .map(([review, [headers, message]]) => refusedBody('wrongContentType', JSON.stringify(review), message, headers));
}

function unknownEncodings(): fc.Arbitrary<FuzzBody> {
  const supported = new Set(['identity', 'gzip', 'deflate', 'br', 'zstd', '']);
  const encoding = fc
    .oneof(fc.constantFrom('compress', 'x-gzip', 'gzip, br', 'identity;q=1', 'lzma', 'exi', 'pack200-gzip'), fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/))
    .filter((e) => !supported.has(e.toLowerCase()));
  return fc
    .tuple(podReview(), encoding)
    .map(([review, contentEncoding]) =>
      refusedBody('unknownEncoding', JSON.stringify(review), /^unsupported content encoding "/, { ...JSON_HEADERS, 'content-encoding': contentEncoding }),
    );
}

/** How often each class comes up, in parts: mostly the classes with the most ways to go wrong, few of the costly huge ones. */
const WEIGHTS: Record<BodyClass, number> = {
  validPod: 12,
  unknownFields: 10,
  hugeStrings: 2,
  deepNesting: 3,
  encoded: 6,
  podWrongTypes: 10,
  workload: 6,
  notCreate: 4,
  notJson: 10,
  notAReview: 6,
  missingFields: 5,
  wrongTypes: 8,
  otherKinds: 6,
  emptyBody: 2,
  corruptEncoding: 4,
  oversized: 2,
  wrongContentType: 5,
  unknownEncoding: 2,
};

/** The arbitrary of each class. */
export function bodyClasses(options: ArbitraryOptions): Record<BodyClass, fc.Arbitrary<FuzzBody>> {
  const limit = options.bodyLimitBytes;
  return {
    validPod: withinLimit(validPods(), limit),
    unknownFields: withinLimit(unknownFieldPods(), limit),
    hugeStrings: hugeStringPods(limit),
    deepNesting: deepNestingPods(limit),
    encoded: withinLimit(encodedPods(), limit),
    podWrongTypes: withinLimit(podsWithWrongTypes(), limit),
    workload: withinLimit(workloads(), limit),
    notCreate: withinLimit(otherOperations(), limit),
    notJson: notJson(limit),
    notAReview: withinLimit(notAReview(limit), limit),
    missingFields: withinLimit(missingFields(), limit),
    wrongTypes: wrongTypes(limit),
    otherKinds: otherKinds(limit),
    emptyBody: emptyBodies(),
    corruptEncoding: corruptEncodings(),
    oversized: oversized(limit),
    wrongContentType: withinLimit(wrongContentTypes(), limit),
    unknownEncoding: withinLimit(unknownEncodings(), limit),
  };
}

/** Any body, of every class in the proportions of WEIGHTS. */
export function anyBody(options: ArbitraryOptions): fc.Arbitrary<FuzzBody> {
  const classes = bodyClasses(options);
  return fc.oneof(...(Object.keys(BODY_CLASSES) as BodyClass[]).map((cls) => ({ weight: WEIGHTS[cls], arbitrary: classes[cls] })));
}
