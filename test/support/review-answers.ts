/**
 * Whether the webhook answered a generated body (review-arbitraries.ts) as its
 * class requires: the status, and then for a 200 the review it must send
 * back, for anything else the message it must give.
 */
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { annotations } from '../../src/annotations.ts';
import { HOOK_CONTAINER_NAME } from '../../src/injector/index.ts';
import { INJECTOR_ERROR_WARNING, WORKLOAD_ERROR_WARNING } from '../../src/webhook/app.ts';
import { BODY_CLASSES, type FuzzBody } from './review-arbitraries.ts';

/** The longest error message expected: the list of accepted kinds and what was sent, each value cut short. */
export const MAX_MESSAGE_LENGTH = 1024;

interface AnswerReview {
  apiVersion?: unknown;
  kind?: unknown;
  response?: { uid?: unknown; allowed?: unknown; patchType?: unknown; patch?: unknown; warnings?: unknown };
}

/**
 * What is wrong with the webhook's answer `status`, `text` to `sent`, or
 * undefined when it is the answer the class requires.
 */
export function checkAnswer(sent: FuzzBody, status: number, text: string): string | undefined {
  const expected = BODY_CLASSES[sent.class];
  if (status !== expected) return `status ${status}, expected ${expected}: ${text.slice(0, 300)}`;
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return `the answer is not JSON: ${text.slice(0, 300)}`;
  }
  return status === 200 ? checkReviewAnswer(sent, answer as AnswerReview) : checkProblem(sent, answer);
}

function checkProblem(sent: FuzzBody, answer: unknown): string | undefined {
  const message = (answer as { error?: unknown } | null)?.error;
  if (typeof message !== 'string' || message === '') return `no error message: ${JSON.stringify(answer).slice(0, 300)}`;
  if (message.length > MAX_MESSAGE_LENGTH) return `an error message of ${message.length} characters: ${message.slice(0, 200)}...`;
  if (sent.message && !sent.message.test(message)) return `the message ${JSON.stringify(message)} does not match ${sent.message}`;
  return undefined;
}

function checkReviewAnswer(sent: FuzzBody, answer: AnswerReview): string | undefined {
  if (answer.apiVersion !== 'admission.k8s.io/v1' || answer.kind !== 'AdmissionReview')
    return `not an AdmissionReview v1: ${JSON.stringify(answer).slice(0, 300)}`;
  const response = answer.response;
  if (response?.uid !== sent.uid) return `uid ${JSON.stringify(response?.uid)?.slice(0, 80)} instead of ${JSON.stringify(sent.uid)?.slice(0, 80)}`;
  if (response?.allowed !== true) return `allowed is ${JSON.stringify(response?.allowed)}`;
  const warnings = Array.isArray(response.warnings) ? response.warnings : [];
  if (warnings.includes(INJECTOR_ERROR_WARNING) || warnings.includes(WORKLOAD_ERROR_WARNING)) return `the webhook failed internally: ${warnings.join(' | ')}`;
  if (sent.patch === 'none') {
    return response.patch === undefined && response.patchType === undefined ? undefined : 'a patch where none may be';
  }
  if (response.patchType !== 'JSONPatch' || typeof response.patch !== 'string') return `no JSON patch: ${JSON.stringify(response).slice(0, 300)}`;
  return checkPatch(sent, Buffer.from(response.patch, 'base64').toString('utf8'));
}

interface PatchedPod {
  metadata?: { annotations?: Record<string, unknown> };
  spec?: { containers?: Array<{ name?: unknown; env?: Array<{ name?: unknown }> }>; initContainers?: Array<{ name?: unknown }> };
}

/** The patch applies to the pod as sent, and the pod it makes has the hook last, POD_NAME in every container and the injected annotation. */
function checkPatch(sent: FuzzBody, patchText: string): string | undefined {
  const submitted = (JSON.parse(sent.review ?? sent.body.toString('utf8')) as { request: { object: unknown } }).request.object;
  let pod: PatchedPod;
  try {
    pod = fastJsonPatch.applyPatch(submitted, JSON.parse(patchText) as Operation[], true, true).newDocument as PatchedPod;
  } catch (error) {
    return `the patch does not apply: ${(error as Error).message}: ${patchText.slice(0, 300)}`;
  }
  if (pod.spec?.initContainers?.at(-1)?.name !== HOOK_CONTAINER_NAME) return 'the release hook is not the last init container';
  const withoutPodName = pod.spec.containers?.find((c) => !c.env?.some((e) => e.name === 'POD_NAME'));
  if (withoutPodName) return `container ${JSON.stringify(withoutPodName.name)} has no POD_NAME`;
  if (typeof pod.metadata?.annotations?.[annotations.injected] !== 'string') return `no ${annotations.injected} annotation`;
  return undefined;
}
