/**
 * An error as one line: its message, then its cause's, as "outer: inner",
 * down the chain. A cause the message already tells is not repeated: one it
 * quotes (its message, or its code as "reading … : ENOENT" does), and the
 * bare abort of a request that timed out or was cancelled, which the error
 * reporting it names ("Timeout: no answer in time"). For one-line reports
 * (`check`'s lines, keys that group failures); a log line takes the Error
 * itself, through the logger's err field.
 */
export function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { message, cause } = error;
  if (cause === undefined || cause === null) return message;
  if (cause instanceof Error && (cause.name === 'AbortError' || cause.name === 'TimeoutError')) return message;
  const inner = errorMessage(cause);
  const code = (cause as NodeJS.ErrnoException).code;
  if (message.includes(inner) || (typeof code === 'string' && message.includes(code))) return message;
  return `${message}: ${inner}`;
}
