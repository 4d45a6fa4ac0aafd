/**
 * The log level both loggers take from LEADERHOOK_LOG_LEVEL: the webhook's
 * (pino) and the release hook's (line-log). A module of its own so that the
 * hook, which logs without pino, parses and refuses a level exactly as the
 * webhook does without loading pino.
 */
import { UserFacingError } from './user-facing-error.ts';

/** pino's levels with pino's numbers, lowest first, and silent, which turns logging off. */
export const LOG_LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Number.POSITIVE_INFINITY } as const;

export type LogLevel = keyof typeof LOG_LEVELS;

function isLogLevel(value: string): value is LogLevel {
  return Object.hasOwn(LOG_LEVELS, value);
}

/** The level `value` names; an unknown one is refused rather than quietly read as another. */
export function parseLogLevel(value: string = process.env.LEADERHOOK_LOG_LEVEL ?? 'info'): LogLevel {
  if (!isLogLevel(value)) {
    throw new UserFacingError(`log level "${value}" (LEADERHOOK_LOG_LEVEL) is not one of ${Object.keys(LOG_LEVELS).join(', ')}`);
  }
  return value;
}
