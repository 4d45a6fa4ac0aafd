/**
 * What a relist tells a watcher that lost its place (410 Gone): which
 * objects changed since it last saw them, and which are gone. Pure, for the
 * recorder's watches (test/support/recorder.ts).
 */

type Listed = { metadata?: { name?: string; resourceVersion?: string } };

export interface RelistChange<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: T;
  /** The object's resourceVersion; for a deletion, unknown but no later than the list's, which it carries. */
  rv: bigint;
}

/**
 * The changes between `known` (the last version seen of each object, by
 * name) and a list taken at `listRv`, in revision order: objects not known
 * before are ADDED, known ones at another resourceVersion MODIFIED, known
 * ones missing from the list DELETED (as last seen). Unchanged objects yield
 * nothing: nothing was missed there.
 */
export function relistChanges<T extends Listed>(known: ReadonlyMap<string, T>, items: readonly T[], listRv: bigint): RelistChange<T>[] {
  const listed = new Set(items.map((item) => item.metadata?.name ?? ''));
  const changed = items.flatMap((item): RelistChange<T>[] => {
    const before = known.get(item.metadata?.name ?? '');
    if (before?.metadata?.resourceVersion === item.metadata?.resourceVersion) return [];
    return [{ type: before ? 'MODIFIED' : 'ADDED', object: item, rv: BigInt(item.metadata?.resourceVersion ?? '0') }];
  });
  const deleted = [...known].filter(([name]) => !listed.has(name)).map(([, object]): RelistChange<T> => ({ type: 'DELETED', object, rv: listRv }));
  return [...changed, ...deleted].sort((a, b) => (a.rv < b.rv ? -1 : a.rv > b.rv ? 1 : 0));
}
