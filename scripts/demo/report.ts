/**
 * The demo's report, from its outcomes (scripts/demo/scenario.ts): per
 * operator, leaderhook's namespace beside the other, then one timeline of
 * all four failovers. Pure: the same outcomes always print the same text.
 */
import type { Outcome, OperatorName } from './scenario.ts';

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const after = (ms: number | undefined) => (ms === undefined ? 'never' : `+${s(ms)}`);

const rows: { label: string; value: (o: Outcome) => string }[] = [
  { label: 'lock freed', value: (o) => after(o.lockFreedMs) },
  { label: 'freed by', value: (o) => o.freedBy },
  { label: 'old pod gone', value: (o) => after(o.oldPodGoneMs) },
  { label: 'new leader', value: (o) => `${after(o.newLeaderMs)}  (${o.newLeader ?? 'none'})` },
];

const operatorTitle: Record<OperatorName, string> = {
  'lfl-operator': 'leader-for-life (operator-lib leader.Become, ConfigMap lock)',
  'lease-operator': 'Lease (controller-runtime, 15 s lease, no ReleaseOnCancel)',
  'client-go-operator': 'Lease (client-go LeaderElector, held as the pod name, 15 s lease, no ReleaseOnCancel)',
  'josdk-operator': "Lease (Java Operator SDK on fabric8's LeaderElector, held as $HOSTNAME, 15 s lease, releaseOnCancel off)",
};

/** One line on what the difference means; honest where leaderhook's lock came free but the operator's own retry decided. */
function verdict(operator: OperatorName, withHook: Outcome, without: Outcome): string {
  if (withHook.newLeaderMs === undefined || withHook.lockFreedMs === undefined) return 'no new leader with leaderhook';
  if (without.newLeaderMs === undefined || without.lockFreedMs === undefined) return 'without leaderhook the lock was never freed';
  const freedSooner = without.lockFreedMs - withHook.lockFreedMs;
  if (withHook.newLeaderMs < without.newLeaderMs) {
    return `new leader ${(without.newLeaderMs / withHook.newLeaderMs).toFixed(1)}× sooner with leaderhook (lock free ${s(freedSooner)} earlier)`;
  }
  const retry =
    operator === 'lfl-operator'
      ? "operator-lib's standby retries on its own backoff (1, 2, 4, 8, then every 16 s)"
      : 'the new leader is elected on its own retry period';
  return `lock free ${s(freedSooner)} ${freedSooner >= 0 ? 'earlier' : 'later'} with leaderhook, new leader no sooner: ${retry}`;
}

/** Columns with and without leaderhook for each operator; times after that leader's delete. */
export function sideBySide(outcomes: readonly Outcome[]): string {
  const out: string[] = [];
  const width = Math.max(24, ...outcomes.filter((o) => o.withLeaderhook).flatMap((o) => rows.map((row) => row.value(o).length)));
  for (const operator of [...new Set(outcomes.map((o) => o.operator))]) {
    const withHook = outcomes.find((o) => o.operator === operator && o.withLeaderhook);
    const without = outcomes.find((o) => o.operator === operator && !o.withLeaderhook);
    out.push(`${operator}: ${operatorTitle[operator]}`);
    out.push(`  ${''.padEnd(14)}${`with leaderhook (${withHook?.namespace ?? '-'})`.padEnd(width + 2)}without (${without?.namespace ?? '-'})`);
    for (const row of rows) {
      out.push(`  ${row.label.padEnd(14)}${(withHook ? row.value(withHook) : '-').padEnd(width + 2)}${without ? row.value(without) : '-'}`);
    }
    if (withHook && without) out.push(`  ${''.padEnd(14)}${verdict(operator, withHook, without)}`);
    out.push('');
  }
  return out.join('\n');
}

/** Every mark of every failover on one time axis, from the first delete. */
export function timeline(outcomes: readonly Outcome[]): string {
  const zero = Math.min(...outcomes.map((o) => o.deleteIssued));
  const tag = (o: Outcome) => `${o.operator.replace('-operator', '')}/${o.withLeaderhook ? 'with' : 'without'}`;
  const width = Math.max(...outcomes.map((o) => tag(o).length));
  return outcomes
    .flatMap((o) => o.marks.map((m) => ({ at: m.at, line: `${tag(o).padEnd(width)}  ${m.label}` })))
    .sort((a, b) => a.at - b.at)
    .map(({ at, line }) => `${`+${s(at - zero)}`.padStart(9)}  ${line}`)
    .join('\n');
}

export function report(outcomes: readonly Outcome[]): string {
  return `${sideBySide(outcomes)}timeline (from the first delete):\n${timeline(outcomes)}\n`;
}
