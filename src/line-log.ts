/**
 * The release hook's logger: one JSON line per event on stdout, in pino's
 * shape (`level` as a word, ISO `time`, `component`, the fields, `msg`), so
 * the webhook's and the hook's lines read and parse alike. Written
 * synchronously with no dependency: the hook runs in every operator pod, and
 * pino with its stream and worker machinery costs memory there for nothing.
 * pino's own Logger satisfies this interface, so tests and the webhook can
 * pass one in.
 */
import { writeSync } from 'node:fs';
import { LOG_LEVELS, parseLogLevel } from './log-level.ts';

export type LogFields = Record<string, unknown>;
type LogMethod = (fields: LogFields, msg?: string) => void;

/** The levels a Logger writes at. */
type LineLevel = 'debug' | 'info' | 'warn' | 'error';

/** The logger of the webhook and of the release hook alike. */
export interface Logger {
  debug: LogMethod;
  info: LogMethod;
  warn: LogMethod;
  error: LogMethod;
  /** Whether a line at `level` is written, as pino's: a caller can skip building one that would be dropped. */
  isLevelEnabled(level: LineLevel): boolean;
  child(bindings: LogFields): Logger;
}

/**
 * An Error as pino's standard serializer writes it: type, message, code,
 * cause, and the stack on error lines only (API failures the hook retries
 * are described by their message; a stack on every retry is noise).
 */
function serializeError(err: Error, withStack: boolean, depth = 0): LogFields {
  const out: LogFields = { type: err.name, message: err.message };
  if (withStack) out.stack = err.stack;
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined) out.code = code;
  if (err.cause instanceof Error && depth < 3) out.cause = serializeError(err.cause, withStack, depth + 1);
  return out;
}

function serialize(fields: LogFields, withStack: boolean): LogFields {
  let out: LogFields | undefined;
  for (const [key, value] of Object.entries(fields)) {
    if (value instanceof Error) {
      out ??= { ...fields };
      out[key] = serializeError(value, withStack);
    }
  }
  return out ?? fields;
}

/** Writes to stdout, whole lines at once; a failed write (stdout closed) drops the line rather than crash the hook. */
function writeStdout(line: string): void {
  try {
    writeSync(1, line);
  } catch {
    // nothing left to tell it to
  }
}

export function createLineLogger(component: string, level?: string, write: (line: string) => void = writeStdout): Logger {
  const threshold = LOG_LEVELS[parseLogLevel(level)];
  const isLevelEnabled = (name: LineLevel) => LOG_LEVELS[name] >= threshold;
  const make = (bindings: LogFields): Logger => {
    const method =
      (name: LineLevel): LogMethod =>
      (fields, msg) => {
        if (!isLevelEnabled(name)) return;
        const record = {
          level: name,
          time: new Date().toISOString(),
          ...bindings,
          ...serialize(fields, name === 'error'),
          ...(msg === undefined ? {} : { msg }),
        };
        write(`${JSON.stringify(record)}\n`);
      };
    return {
      debug: method('debug'),
      info: method('info'),
      warn: method('warn'),
      error: method('error'),
      isLevelEnabled,
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return make({ component });
}
