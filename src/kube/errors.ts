import { isRecord } from '../is-record.ts';
import type { Status } from './types.ts';

/**
 * A failed API call. `status` is the HTTP status (0 when no response came
 * back: connection refused, reset, timed out); `reason` is the API's
 * machine-readable reason (NotFound, Conflict, Forbidden, Gone, ...) or, for
 * transport failures, Timeout / NetworkError. The message always says which
 * call failed.
 */
export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly method: string;
  readonly path: string;

  constructor(init: { method: string; path: string; status: number; reason: string; detail: string; cause?: unknown }) {
    const code = init.status === 0 ? init.reason : `${init.status} ${init.reason}`;
    super(`${init.method} ${init.path}: ${code}: ${init.detail}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'KubeApiError';
    this.status = init.status;
    this.reason = init.reason;
    this.method = init.method;
    this.path = init.path;
  }
}

const reasonByStatus: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Gone',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** Builds the error from an HTTP error response, whose body is usually a Status. */
export function errorFromResponse(method: string, path: string, status: number, body: string): KubeApiError {
  let parsed: Status | undefined;
  try {
    const value = JSON.parse(body) as Status;
    if (isRecord(value) && value.kind === 'Status') parsed = value;
  } catch {
    // not JSON: a proxy or load balancer answered; keep the raw text
  }
  const reason = parsed?.reason || reasonByStatus[status] || 'Unknown';
  const detail = parsed?.message || body.trim().slice(0, 300) || '(empty body)';
  return new KubeApiError({ method, path, status, reason, detail });
}

/** The Status of a watch ERROR event, mapped the same way. */
export function errorFromStatus(method: string, path: string, status: Status): KubeApiError {
  const code = status.code ?? 500;
  return new KubeApiError({
    method,
    path,
    status: code,
    reason: status.reason || reasonByStatus[code] || 'Unknown',
    detail: status.message || '(no message)',
  });
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 404;
}

export function isForbidden(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 403;
}

export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 409;
}

export function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 410;
}
