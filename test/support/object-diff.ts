/**
 * Where two JSON-like values differ, as lines a person can act on:
 * `spec.template.spec.containers[0].image: "a" -> "b"`. Arrays are compared
 * index by index, objects key by key; a missing side shows as `(absent)`.
 */
export function differences(left: unknown, right: unknown, path = ''): string[] {
  if (Object.is(left, right)) return [];
  const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));
  if (Array.isArray(left) && Array.isArray(right)) {
    const out: string[] = [];
    for (let i = 0; i < Math.max(left.length, right.length); i++) out.push(...differences(left[i], right[i], `${path}[${i}]`));
    return out;
  }
  if (isPlainObject(left) && isPlainObject(right)) {
    const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])].sort();
    return keys.flatMap((key) => differences(left[key], right[key], path ? `${path}.${key}` : key));
  }
  return [`${path || '(root)'}: ${show(left)} -> ${show(right)}`];
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
