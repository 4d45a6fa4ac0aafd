/**
 * Whether a decoded JSON value is an object with fields to read: not null,
 * not an array (whose fields are its items).
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
