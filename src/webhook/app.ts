/**
 * The webhook's HTTP surface: `POST /mutate` and the probes. The admission
 * handler only decodes, calls the injector, encodes (Istio, controller-runtime):
 * everything leaderhook decides about a pod lives in src/injector.
 *
 * Pods get a patch; workloads (Deployments, Jobs, ...) get warnings about
 * their pods and never a patch (docs/design.md#warnings-on-workloads-never-patches),
 * so GitOps tools see no drift.
 *
 * Every answer to a well-formed review is `allowed: true`; only a body that
 * is not a review at all gets a 4xx, with a message naming the problem. A
 * client's mistake is never a 500, and nothing a client sends can crash the
 * process.
 */
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import type { InjectionResult, InjectionSettings, WorkloadResult } from '../injector/types.ts';
import { findWorkloadKind, type WorkloadKind } from '../injector/workloads.ts';
import type { Logger } from '../log.ts';
import { AdmissionDecodeError, type AdmissionRequest, type AdmissionReview, allowed, decodeAdmissionReview, patched } from './admission.ts';
import {
  type AdmissionOutcome,
  INJECTOR_ERROR_REASON,
  NOT_CREATE_OR_UPDATE_REASON,
  NOT_CREATE_REASON,
  outcomeOf,
  type WebhookMetrics,
  workloadOutcomeOf,
} from './metrics.ts';
import { parseReviewJson } from './review-json.ts';

/** The injector's contract (src/injector): pure, throws only on a bug. */
export type Injector = (pod: unknown, settings: InjectionSettings) => InjectionResult;

/** The workload checker's contract (src/injector/workloads.ts): pure, warnings only, throws only on a bug. */
export type WorkloadChecker = (workload: unknown, settings: InjectionSettings) => WorkloadResult;

export interface WebhookAppOptions {
  inject: Injector;
  workloadWarnings: WorkloadChecker;
  injection: InjectionSettings;
  logger: Logger;
  metrics: WebhookMetrics;
  /** Larger bodies get 413. Pods are limited to ~1.5 MiB by etcd; the review wraps one. */
  bodyLimitBytes: number;
  /** Why the server cannot take admissions now (no certificate yet, shutting down); undefined when it can. */
  notReadyReason: () => string | undefined;
  /** True once shutdown began: answers then close their connection, so keep-alive clients move on. */
  isClosing?: () => boolean;
}

/** Shown by kubectl when the injector failed and the pod was let in unchanged. */
export const INJECTOR_ERROR_WARNING =
  'leaderhook: the release hook was not injected because of an internal webhook error; the pod is admitted unchanged (see the webhook logs)';

/** Shown by kubectl when checking a workload's pod template failed; the workload is admitted as always. */
export const WORKLOAD_ERROR_WARNING = "leaderhook: this object's pod template could not be checked (internal webhook error; see the webhook logs)";

const JSON_TYPE = 'application/json';
const EMPTY_BODY = `the request body is empty; expected an AdmissionReview (${JSON_TYPE})`;

/** JSON is UTF-8, -16 or -32 (RFC 7159 8.1); UTF-32 is not among the encodings TextDecoder knows, and no API server sends it. */
const JSON_CHARSETS = new Set(['utf-8', 'utf-16', 'utf-16le', 'utf-16be']);

/** The charset parameter of a Content-Type's lowercased parameters, unquoted. */
function charsetOf(parameters: readonly string[]): string | undefined {
  return parameters
    .find((p) => p.startsWith('charset='))
    ?.slice('charset='.length)
    .replace(/^"(.*)"$/, '$1');
}

/** The body as UTF-8 bytes: as sent, or re-encoded from UTF-16. */
function utf8Body(req: Request): Buffer {
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  const charset = charsetOf((req.get('content-type') ?? '').split(';').map((part) => part.trim().toLowerCase()));
  if (charset === undefined || charset === 'utf-8') return body;
  return Buffer.from(new TextDecoder(charset).decode(body), 'utf8');
}

function sendProblem(res: Response, status: number, message: string): void {
  res.status(status).json({ error: message });
}

/** The object's identity for log lines: pods created by controllers have only generateName at admission. */
function objectIdentity(request: AdmissionRequest): Record<string, string> {
  const meta = (request.object?.metadata ?? {}) as { name?: unknown; namespace?: unknown; generateName?: unknown };
  const identity: Record<string, string> = { kind: request.kind.kind };
  const namespace = request.namespace || (typeof meta.namespace === 'string' ? meta.namespace : '');
  const name = request.name || (typeof meta.name === 'string' ? meta.name : '');
  if (namespace) identity.namespace = namespace;
  if (name) identity.name = name;
  else if (typeof meta.generateName === 'string') identity.generateName = meta.generateName;
  return identity;
}

/** What to answer, and the one log line and metric that go with it. */
interface Decision {
  outcome: AdmissionOutcome;
  reason: string;
  answer: AdmissionReview;
  level: 'info' | 'warn' | 'error';
  message: string;
  details?: Record<string, unknown>;
}

function decidePod(request: AdmissionRequest, inject: Injector, settings: InjectionSettings): Decision {
  if (request.object === null || (request.operation !== undefined && request.operation !== 'CREATE')) {
    // A running pod's spec is immutable: a patch here would make the API
    // server refuse the whole update. Only a misregistered webhook gets these.
    return {
      outcome: 'skipped',
      reason: NOT_CREATE_REASON,
      answer: allowed(request.uid),
      level: 'warn',
      message: 'admission answered without a patch: only CREATE is injected',
    };
  }
  try {
    // dryRun changes nothing here: the injector has no side effects to skip.
    const result = inject(request.object, settings);
    return {
      outcome: outcomeOf(result.reason),
      reason: result.reason,
      answer: patched(request.uid, result.patch, result.warnings),
      level: 'info',
      message: 'admission answered',
      details: { detail: result.message, patchOperations: result.patch.length, warnings: result.warnings },
    };
  } catch (error) {
    return admittedAfterError(request, INJECTOR_ERROR_WARNING, 'injector failed, pod admitted unchanged', error);
  }
}

/** An exception in the injector or checker admits the object as it came, with a warning saying so: never worse than no webhook. */
function admittedAfterError(request: AdmissionRequest, warning: string, message: string, error: unknown): Decision {
  return { outcome: 'error', reason: INJECTOR_ERROR_REASON, answer: allowed(request.uid, [warning]), level: 'error', message, details: { err: error } };
}

/**
 * A workload is answered with warnings only, never a patch: what the pods
 * will get is the webhook's business at pod admission, and a changed
 * workload would drift from what a GitOps tool applied. An UPDATE is checked
 * like a CREATE, since a changed template is where a new warning comes from.
 */
function decideWorkload(request: AdmissionRequest, kind: WorkloadKind, check: WorkloadChecker, settings: InjectionSettings): Decision {
  const operation = request.operation;
  if (request.object === null || (operation !== undefined && operation !== 'CREATE' && operation !== 'UPDATE')) {
    return {
      outcome: 'skipped',
      reason: NOT_CREATE_OR_UPDATE_REASON,
      answer: allowed(request.uid),
      level: 'warn',
      message: 'workload admission answered without warnings: only CREATE and UPDATE are checked',
    };
  }
  try {
    // The decoder made sure apiVersion and kind, when the object has them, agree with request.kind.
    const result = check({ ...request.object, apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind }, settings);
    return {
      outcome: workloadOutcomeOf(result.reason),
      reason: result.reason,
      answer: allowed(request.uid, result.warnings),
      level: 'info',
      message: 'workload admission answered with warnings only',
      details: { detail: result.message, warnings: result.warnings },
    };
  } catch (error) {
    return admittedAfterError(request, WORKLOAD_ERROR_WARNING, 'checking the pod template failed, workload admitted without its warnings', error);
  }
}

export function createWebhookApp(options: WebhookAppOptions): express.Express {
  const { inject, workloadWarnings, injection, logger, metrics, bodyLimitBytes, notReadyReason } = options;
  const isClosing = options.isClosing ?? (() => false);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  function reject(req: Request, res: Response, status: number, problem: string): void {
    metrics.rejectedRequests.inc({ status: String(status) });
    logger.warn(
      {
        status,
        problem,
        method: req.method,
        path: req.path,
        contentType: req.get('content-type'),
        contentLength: req.get('content-length'),
        remoteAddress: req.socket.remoteAddress,
      },
      'admission request refused',
    );
    sendProblem(res, status, problem);
  }

  app.use((_req, res, next) => {
    if (isClosing()) res.set('Connection', 'close');
    next();
  });

  const startTimer: RequestHandler = (_req, res, next) => {
    res.locals.started = process.hrtime.bigint();
    next();
  };

  // Checked before parsing so a wrong type is a 415 naming it, not a silently empty body.
  const requireJson: RequestHandler = (req, res, next) => {
    const length = req.get('content-length');
    const hasBody = req.get('transfer-encoding') !== undefined || (length !== undefined && length !== '0');
    if (!hasBody) return reject(req, res, 400, EMPTY_BODY);
    const contentType = req.get('content-type');
    if (contentType === undefined) return reject(req, res, 415, `Content-Type is missing; it must be ${JSON_TYPE}`);
    const [mediaType, ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
    if (mediaType !== JSON_TYPE) {
      return reject(req, res, 415, `Content-Type must be ${JSON_TYPE}, got ${JSON.stringify(contentType)}`);
    }
    const charset = charsetOf(parameters);
    if (charset !== undefined && !JSON_CHARSETS.has(charset)) return reject(req, res, 415, `unsupported charset "${charset.toUpperCase()}"`);
    next();
  };

  // The body's bytes (inflated and limited by body-parser); parseReviewJson decodes and parses
  // them without managedFields, which no answer depends on and which cost most of the parse.
  const readBody = express.raw({ limit: bodyLimitBytes, type: JSON_TYPE });

  const mutate: RequestHandler = (req, res) => {
    const bytes = utf8Body(req);
    // A chunked body can end before its first byte: as empty as a Content-Length of 0.
    if (bytes.length === 0) return reject(req, res, 400, EMPTY_BODY);
    let body: unknown;
    try {
      body = parseReviewJson(bytes);
    } catch (error) {
      return reject(req, res, 400, `the request body is not valid JSON: ${(error as Error).message}`);
    }
    let request: AdmissionRequest;
    try {
      request = decodeAdmissionReview(body).request;
    } catch (error) {
      if (error instanceof AdmissionDecodeError) return reject(req, res, 400, error.message);
      throw error;
    }
    const workload = findWorkloadKind(request.kind);
    const decision = workload === undefined ? decidePod(request, inject, injection) : decideWorkload(request, workload, workloadWarnings, injection);
    const { outcome, reason } = decision;
    const fields = { uid: request.uid, ...objectIdentity(request), operation: request.operation, dryRun: request.dryRun === true };
    logger[decision.level]({ ...fields, outcome, reason, ...decision.details }, decision.message);
    metrics.admissions.inc({ outcome, reason });
    const started = res.locals.started as bigint | undefined;
    if (started !== undefined) {
      metrics.admissionDuration.observe({ outcome }, Number(process.hrtime.bigint() - started) / 1e9);
    }
    res.status(200).json(decision.answer);
  };

  app.post('/mutate', startTimer, requireJson, readBody, mutate);
  app.all('/mutate', (req, res) => {
    res.set('Allow', 'POST');
    reject(req, res, 405, `method ${req.method} is not allowed on /mutate; use POST`);
  });

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  app.get('/readyz', (_req, res) => {
    const reason = notReadyReason();
    if (reason === undefined) res.type('text/plain').send('ok\n');
    else res.status(503).type('text/plain').send(`not ready: ${reason}\n`);
  });

  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.use((req, res) => {
    sendProblem(res, 404, `no route for ${req.method} ${req.path}; the webhook serves POST /mutate, GET /healthz, /readyz, /metrics`);
  });

  const handleError: ErrorRequestHandler = (error, req, res, _next) => {
    // body-parser's errors carry a `type` and the status that fits the client's mistake.
    const type = typeof error?.type === 'string' ? (error.type as string) : undefined;
    const status = typeof error?.status === 'number' ? (error.status as number) : 500;
    if (res.headersSent) {
      logger.error({ err: error, path: req.path }, 'error after the answer was sent');
      return;
    }
    const encoding = req.get('content-encoding')?.toLowerCase() ?? 'identity';
    if (type === undefined && status === 400 && encoding !== 'identity') {
      // body-parser passes zlib's errors on untyped, in zlib's words ("incorrect header check"), which do not say the body was compressed.
      return reject(req, res, 400, `the request body could not be decompressed (Content-Encoding: ${encoding}): ${error.message}`);
    }
    switch (type) {
      case 'entity.too.large':
        return reject(req, res, 413, `the request body is larger than the limit of ${bodyLimitBytes} bytes`);
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return reject(req, res, 415, error.message);
      case 'request.aborted':
        logger.warn({ path: req.path, remoteAddress: req.socket.remoteAddress }, 'client went away before sending the whole body');
        return;
    }
    if (status >= 400 && status < 500) return reject(req, res, status, error.message ?? 'bad request');
    logger.error({ err: error, method: req.method, path: req.path }, 'unexpected error while answering');
    sendProblem(res, 500, 'internal error; see the webhook logs');
  };
  app.use(handleError);

  return app;
}
