import { type Logger as PinoLogger, pino } from 'pino';
import { parseLogLevel } from './log-level.ts';

/** The webhook logs through the same Logger interface as the release hook; pino's logger is one. */
export type { Logger } from './line-log.ts';

/**
 * One JSON line per event on stdout, as kubectl logs and every log shipper
 * expect. `component` tells the webhook's lines from the hook's.
 */
export function createLogger(component: string, level?: string): PinoLogger {
  return pino({
    // Parsed here rather than by pino, which refuses an unknown level in its own terms ("default level:… must be included in custom levels").
    level: parseLogLevel(level),
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
