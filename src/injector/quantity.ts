/**
 * Kubernetes resource quantities, exactly: enough to tell whether a request
 * equals a limit however each is written ("1" and "1000m", "128Mi" and
 * "134217728"), as the API server compares them for a pod's QoS class.
 */

/** Digits, an optional fraction, an optional suffix: the quantities the injector accepts. */
const QUANTITY = /^([0-9]+)(?:\.([0-9]+))?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]+)?$/;

export function isResourceQuantity(value: string): boolean {
  return QUANTITY.test(value);
}

const DECIMAL_EXPONENT: Record<string, number> = { m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_EXPONENT: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/** A quantity as the exact fraction numerator / denominator; undefined for what isResourceQuantity refuses. */
function exact(value: string): { numerator: bigint; denominator: bigint } | undefined {
  const match = QUANTITY.exec(value);
  if (!match) return undefined;
  const [, whole, fraction = '', suffix = ''] = match;
  let numerator = BigInt(`${whole}${fraction}`);
  let denominator = 10n ** BigInt(fraction.length);
  const decimal = suffix.startsWith('e') ? Number(suffix.slice(1)) : (DECIMAL_EXPONENT[suffix] ?? 0);
  if (decimal >= 0) numerator *= 10n ** BigInt(decimal);
  else denominator *= 10n ** BigInt(-decimal);
  numerator *= 2n ** BigInt(BINARY_EXPONENT[suffix] ?? 0);
  return { numerator, denominator };
}

/** Whether two quantities are the same amount; false when either is not a quantity. */
export function sameQuantity(a: string, b: string): boolean {
  const x = exact(a);
  const y = exact(b);
  return x !== undefined && y !== undefined && x.numerator * y.denominator === y.numerator * x.denominator;
}

/** Whether a quantity is more than zero (the API server counts a zero request as none); false when it is not a quantity. */
export function positiveQuantity(value: string): boolean {
  return (exact(value)?.numerator ?? 0n) > 0n;
}

/** A quantity as a number of its unit (bytes for memory: "96Mi" is 100663296); undefined when it is not a quantity. */
export function quantityValue(value: string): number | undefined {
  const fraction = exact(value);
  return fraction && Number(fraction.numerator) / Number(fraction.denominator);
}
