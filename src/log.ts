import { pino, type Logger } from 'pino';
import { UserFacingError } from './user-facing-error.ts';

export type { Logger };

/** The levels pino knows, and silent, which turns logging off. */
const LEVELS = [...Object.keys(pino.levels.values), 'silent'];

/**
 * One JSON line per event on stdout, as kubectl logs and every log shipper
 * expect. `component` tells the webhook's lines from the hook's.
 */
export function createLogger(component: string, level = process.env.LEADERHOOK_LOG_LEVEL ?? 'info'): Logger {
  // pino refuses an unknown level in its own terms ("default level:… must be included in custom levels").
  if (!LEVELS.includes(level)) throw new UserFacingError(`log level "${level}" (LEADERHOOK_LOG_LEVEL) is not one of ${LEVELS.join(', ')}`);
  return pino({
    level,
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
