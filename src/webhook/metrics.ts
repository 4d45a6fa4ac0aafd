/**
 * The webhook's Prometheus metrics. Each server owns its Registry (not
 * prom-client's global one), so several servers in one process — tests, a
 * benchmark — never share or double-register counters.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { InjectionReason, WorkloadReason } from '../injector/types.ts';

/**
 * What an admission ended as: the `outcome` label. `warned` is a workload
 * answered with warnings and, as every workload, without a patch.
 */
export type AdmissionOutcome = 'injected' | 'updated' | 'warned' | 'skipped' | 'error';

/** The `reason` label of an admission whose injector threw. */
export const INJECTOR_ERROR_REASON = 'injectorError';
/** The `reason` label of an admission for another operation than CREATE, answered without a patch. */
export const NOT_CREATE_REASON = 'notCreate';
/** The `reason` label of a workload admission for another operation than CREATE or UPDATE, answered without warnings. */
export const NOT_CREATE_OR_UPDATE_REASON = 'notCreateOrUpdate';

const REASON_OUTCOMES: Record<InjectionReason, AdmissionOutcome> = {
  injected: 'injected',
  updated: 'updated',
  alreadyInjected: 'skipped',
  optedOut: 'skipped',
  mirrorPod: 'skipped',
  notAPod: 'skipped',
};

export function outcomeOf(reason: InjectionReason): AdmissionOutcome {
  return REASON_OUTCOMES[reason] ?? 'skipped';
}

const WORKLOAD_REASON_OUTCOMES: Record<WorkloadReason, AdmissionOutcome> = {
  templateWarnings: 'warned',
  templateClean: 'skipped',
  templateSkipped: 'skipped',
  noPodTemplate: 'skipped',
  notAWorkload: 'skipped',
};

export function workloadOutcomeOf(reason: WorkloadReason): AdmissionOutcome {
  return WORKLOAD_REASON_OUTCOMES[reason] ?? 'skipped';
}

export interface WebhookMetrics {
  registry: Registry;
  admissions: Counter<'outcome' | 'reason'>;
  admissionDuration: Histogram<'outcome'>;
  /** Bodies refused before the injector ran, by HTTP status. */
  rejectedRequests: Counter<'status'>;
  certificateReloads: Counter;
  certificateReloadErrors: Counter;
  certificateExpiry: Gauge;
}

export function createWebhookMetrics(): WebhookMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const admissions = new Counter({
    name: 'leaderhook_admissions_total',
    help: 'Admissions answered, by outcome (injected, updated, warned, skipped, error) and the pod or workload reason.',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  });
  // Every known series starts at 0, so rate() and alerts work from the first scrape.
  for (const [reason, outcome] of Object.entries({ ...REASON_OUTCOMES, ...WORKLOAD_REASON_OUTCOMES })) admissions.inc({ outcome, reason }, 0);
  admissions.inc({ outcome: 'error', reason: INJECTOR_ERROR_REASON }, 0);

  const admissionDuration = new Histogram({
    name: 'leaderhook_admission_duration_seconds',
    help: 'Time from receiving an admission request to sending the answer, body parsing included.',
    labelNames: ['outcome'] as const,
    // The API server gives a webhook timeoutSeconds (5 s); most answers take well under 10 ms.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const rejectedRequests = new Counter({
    name: 'leaderhook_admission_rejected_requests_total',
    help: 'Requests to /mutate refused before the injector ran (not JSON, not an AdmissionReview, too large), by HTTP status.',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const certificateReloads = new Counter({
    name: 'leaderhook_certificate_reloads_total',
    help: 'Serving certificates loaded, the first one included.',
    registers: [registry],
  });
  const certificateReloadErrors = new Counter({
    name: 'leaderhook_certificate_reload_errors_total',
    help: 'Changed certificate files that could not be loaded; the previous pair kept serving.',
    registers: [registry],
  });
  const certificateExpiry = new Gauge({
    name: 'leaderhook_certificate_expiry_timestamp_seconds',
    help: 'notAfter of the serving certificate in use, as a Unix timestamp.',
    registers: [registry],
  });
  return {
    registry,
    admissions,
    admissionDuration,
    rejectedRequests,
    certificateReloads,
    certificateReloadErrors,
    certificateExpiry,
  };
}
