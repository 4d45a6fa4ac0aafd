import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * One JSON line per event on stdout, as kubectl logs and every log shipper
 * expect. `component` tells the webhook's lines from the hook's.
 */
export function createLogger(component: string, level = process.env.LEADERHOOK_LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { component },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
