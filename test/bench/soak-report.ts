/**
 * docs/soak.md, rendered from the soak's record (soak-analysis.ts). Pure: no
 * clock, a stable order, so the same record always gives the same bytes. The
 * faults applied per kind and mode, the soak's targets each measured and
 * judged, and the slope of the hooks' and webhook's memory.
 */
import { writeFile } from 'node:fs/promises';
import { seconds, type Verdict } from './failover-summary.ts';
import { row, runSpan } from './report-format.ts';
import {
  cpuMilliCores,
  type FaultCounts,
  type FaultMode,
  GAP_CAUSE_WINDOW_MS,
  type GapsAfterFault,
  gapsAfterFaults,
  heapAfterMajorGcs,
  LEAK_THRESHOLD_BYTES_PER_HOUR,
  type LeakResult,
  leakVerdict,
  type MemoryPart,
  MIN_SLOPE_SPAN_MS,
  type ModeTotals,
  memorySeries,
  NO_FAULT,
  type SoakCheckRecord,
  type SoakRecord,
  type SoakRunRecord,
  type SoakSampleRecord,
  type SoakTotals,
  soakRunOf,
  soakTotals,
} from './soak-analysis.ts';
import { HEARTBEAT_SILENCE_MS } from './soak-leaders.ts';
import { soakFaultText } from './soak-plan.ts';
import { median, spreadOf } from './stats.ts';

/** Two decimals, without the "-0.00" of a slope a hair under zero. */
const mibPerHour = (bytesPerHour: number) => (bytesPerHour / 2 ** 20).toFixed(2).replace(/^-(0\.00)$/, '$1');

/** "2 h 0 min", "45 min": the scale a soak is told in. */
function hoursMinutes(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  return minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes} min`;
}

const when = (run: SoakRunRecord) => runSpan(run, hoursMinutes);

const MODE_COLUMNS: readonly { mode: FaultMode; label: string }[] = [
  { mode: 'with', label: 'with leaderhook' },
  { mode: 'without', label: 'without' },
  { mode: 'cluster', label: 'cluster-wide' },
];

/** Applied, and skipped or failed where some were; "—" where the fault cannot land in that column. */
function faultCell(counts: FaultCounts, mode: FaultMode): string {
  const scope = soakFaultText(counts.fault)?.scope;
  const applies = scope === undefined || (scope === 'cluster') === (mode === 'cluster');
  if (!applies) return '—';
  const notApplied = [
    ...(counts.skipped[mode] > 0 ? [`${counts.skipped[mode]} skipped`] : []),
    ...(counts.failed[mode] > 0 ? [`${counts.failed[mode]} failed`] : []),
  ];
  return notApplied.length > 0 ? `${counts.applied[mode]} (${notApplied.join(', ')})` : String(counts.applied[mode]);
}

function faultTable(faults: readonly FaultCounts[]): string[] {
  if (faults.length === 0) return ['No fault was applied.'];
  return [
    row(['fault', ...MODE_COLUMNS.map((column) => column.label)]),
    row(['---', '---:', '---:', '---:']),
    ...faults.map((counts) => row([soakFaultText(counts.fault)?.description ?? counts.fault, ...MODE_COLUMNS.map(({ mode }) => faultCell(counts, mode))])),
  ];
}

interface SoakTargetResult {
  target: string;
  measured: string;
  verdict: Verdict;
}

/** Judged with leaderhook; the baseline's count is shown beside it, since a lost lock there is a finding too. */
function zeroTarget(target: string, totals: SoakTotals, pick: (mode: ModeTotals) => number): SoakTargetResult {
  const { withLeaderhook: withHook, withoutLeaderhook: without } = totals;
  return {
    target,
    measured: `${pick(withHook)} in ${withHook.checks} checks with leaderhook (${pick(without)} in ${without.checks} without)`,
    verdict: withHook.checks === 0 ? 'not measured' : pick(withHook) === 0 ? 'met' : 'not met',
  };
}

/** As zeroTarget, and where a watch had to relist, how many stretches the checker could not see. */
function splitBrainTarget(totals: SoakTotals): SoakTargetResult {
  const result = zeroTarget('0 split brain', totals, (mode) => mode.splitBrain);
  const { withLeaderhook: withHook, withoutLeaderhook: without } = totals;
  if (withHook.unobserved + without.unobserved === 0) return result;
  return {
    ...result,
    measured: `${result.measured}; not seen, a watch having relisted: ${withHook.unobserved} stretches with leaderhook, ${without.unobserved} without`,
  };
}

/**
 * With gap records, judged fault by fault: after each fault both modes met,
 * the median stretch with leaderhook is no longer than without, and no
 * stretch with leaderhook followed a fault the baseline cannot have (a hook
 * killed) or none at all. Without them (a record from before they were
 * written), the longest stretch of each mode, whatever the faults.
 */
function leaderlessTarget(totals: SoakTotals, gaps: readonly GapsAfterFault[]): SoakTargetResult {
  const target = 'no operator without a leader for longer than without leaderhook';
  const withHook = totals.withLeaderhook.longestLeaderlessMs;
  const without = totals.withoutLeaderhook.longestLeaderlessMs;
  if (withHook === undefined || without === undefined) return { target, measured: 'checks in one mode only', verdict: 'not measured' };
  const longest = `longest ${seconds(withHook)} with leaderhook, ${seconds(without)} without`;
  if (gaps.length === 0) return { target, measured: longest, verdict: withHook <= without ? 'met' : 'not met' };
  const compared = gaps.filter((group) => group.fault !== NO_FAULT && group.withLeaderhook.length > 0 && group.withoutLeaderhook.length > 0);
  const longer = compared.filter((group) => median(group.withLeaderhook) > median(group.withoutLeaderhook)).map((group) => group.fault);
  const unmatched = gaps
    .filter((group) => group.withLeaderhook.length > 0 && (group.fault === NO_FAULT || group.withoutLeaderhook.length === 0))
    .map((group) => group.fault);
  const parts = [`median after the same fault no longer with leaderhook for ${compared.length - longer.length} of ${compared.length} faults`];
  if (longer.length > 0) parts.push(`longer after ${longer.join(', ')}`);
  if (unmatched.length > 0) parts.push(`stretches with leaderhook after ${unmatched.join(', ')}, which the baseline has none of`);
  return { target, measured: `${parts.join('; ')} (${longest})`, verdict: longer.length === 0 && unmatched.length === 0 ? 'met' : 'not met' };
}

/** The leaderless stretches per fault, where the record has them (a record from before they were written has none). */
function leaderlessSection(records: readonly SoakRecord[]): string[] {
  const gaps = gapsAfterFaults(records);
  if (gaps.length === 0) return [];
  return [
    '## Leaderless stretches',
    '',
    `Each stretch with nobody leading (no lock holder writing heartbeats for ${HEARTBEAT_SILENCE_MS / 1000} s or more), against the fault it followed:`,
    `the latest on its namespace, or cluster-wide, at most ${GAP_CAUSE_WINDOW_MS / 60_000} min before it began.`,
    '',
    ...gapTable(gaps),
    '',
  ];
}

/** Per fault, the leaderless stretches that followed it in each mode. */
function gapTable(gaps: readonly GapsAfterFault[]): string[] {
  const cells = (ms: readonly number[]) => (ms.length === 0 ? ['0', '—', '—'] : [String(ms.length), seconds(median(ms)), seconds(Math.max(...ms))]);
  return [
    row(['after', 'with leaderhook: n', 'p50', 'max', 'without: n', 'p50', 'max']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:']),
    ...gaps.map((group) =>
      row([
        group.fault === NO_FAULT ? 'no fault within 2 min before it' : (soakFaultText(group.fault)?.description ?? group.fault),
        ...cells(group.withLeaderhook),
        ...cells(group.withoutLeaderhook),
      ]),
    ),
  ];
}

const KIND_LABELS: Record<'hook' | 'webhook', string> = { hook: 'release hook', webhook: 'webhook' };

/** What a leak is judged on: the working set, its anonymous part, or the V8 heap after each major collection. */
type JudgedMemory = MemoryPart | 'heapAfterGc';

/** Each judged memory as a target names it ("release hook memory flat") and as the memory table's rows do ("release hook"). */
const PART_LABELS: Record<JudgedMemory, { target: string; row: string }> = {
  workingSet: { target: 'memory', row: '' },
  anon: { target: 'anonymous memory', row: ' anonymous' },
  heapAfterGc: { target: 'heap after a major collection', row: ' heap after a major collection' },
};

/**
 * Each kind's leak verdicts, on the working set, its anonymous part and the
 * heap after each major collection: the last two are empty in a record from
 * before they were sampled.
 */
type Leaks = Record<'hook' | 'webhook', Record<JudgedMemory, LeakResult[]>>;

const MEMORY_PARTS_OF = (leaks: Leaks): JudgedMemory[] =>
  (['workingSet', 'anon', 'heapAfterGc'] as const).filter((part) => part === 'workingSet' || leaks.hook[part].length + leaks.webhook[part].length > 0);

function memoryTarget(kind: 'hook' | 'webhook', part: JudgedMemory, results: readonly LeakResult[]): SoakTargetResult {
  const target = `${KIND_LABELS[kind]} ${PART_LABELS[part].target} flat (slope ≤ ${mibPerHour(LEAK_THRESHOLD_BYTES_PER_HOUR)} MiB/h)`;
  const judged = results.filter((result) => result.slope !== undefined);
  if (judged.length === 0) return { target, measured: `none of ${results.length} container runs long enough`, verdict: 'not measured' };
  const grows = judged.filter((result) => result.verdict === 'grows').length;
  const largest = Math.max(...judged.map((result) => result.slope!.bytesPerHour));
  return {
    target,
    measured: `${grows} of ${judged.length} container runs grow; largest slope ${mibPerHour(largest)} MiB/h`,
    verdict: grows === 0 ? 'met' : 'not met',
  };
}

function restartTarget(totals: SoakTotals, sampled: boolean): SoakTargetResult {
  const ours = totals.uncausedRestarts.filter((restart) => restart.kind !== 'operator').length;
  return {
    target: 'no hook or webhook restart but those a fault caused',
    measured: `${ours} not caused by a fault (${totals.causedRestarts} restarts caused by a crash, kill or API server restart)`,
    verdict: !sampled ? 'not measured' : ours === 0 ? 'met' : 'not met',
  };
}

function targets(records: readonly SoakRecord[], totals: SoakTotals, leaks: Leaks): SoakTargetResult[] {
  const watched = records.some((record) => record.kind === 'watch');
  return [
    splitBrainTarget(totals),
    zeroTarget('0 lock left held by a pod that can never run', totals, (mode) => mode.lockHeldByDeadPod),
    leaderlessTarget(totals, gapsAfterFaults(records)),
    ...MEMORY_PARTS_OF(leaks).flatMap((part) => [memoryTarget('hook', part, leaks.hook[part]), memoryTarget('webhook', part, leaks.webhook[part])]),
    {
      target: 'no watch left disconnected',
      measured: `${totals.watchesDown.length} down at the end`,
      verdict: !watched ? 'not measured' : totals.watchesDown.length === 0 ? 'met' : 'not met',
    },
    restartTarget(
      totals,
      records.some((record) => record.kind === 'sample'),
    ),
  ];
}

function memoryTable(leaks: Leaks): string[] {
  const lines = [
    row(['container', 'runs', 'judged', 'slope MiB/h p50', 'max', 'r² at max', 'verdict']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---']),
  ];
  for (const [kind, part] of MEMORY_PARTS_OF(leaks).flatMap((part) => (['hook', 'webhook'] as const).map((kind) => [kind, part] as const))) {
    const judged = leaks[kind][part].filter((result) => result.slope !== undefined);
    const steepest = judged.reduce<LeakResult | undefined>(
      (top, result) => (top && top.slope!.bytesPerHour >= result.slope!.bytesPerHour ? top : result),
      undefined,
    );
    const grows = judged.some((result) => result.verdict === 'grows');
    lines.push(
      row([
        `${KIND_LABELS[kind]}${PART_LABELS[part].row}`,
        leaks[kind][part].length,
        judged.length,
        steepest ? mibPerHour(median(judged.map((result) => result.slope!.bytesPerHour))) : '—',
        steepest ? mibPerHour(steepest.slope!.bytesPerHour) : '—',
        steepest ? steepest.slope!.r2.toFixed(2) : '—',
        steepest === undefined ? 'not measured' : grows ? '**grows**' : 'flat',
      ]),
    );
  }
  return lines;
}

/** Whether any sample of the record has the anonymous part, or the CPU time: an older record renders as it always did without them. */
function sampled(records: readonly SoakRecord[]): { anon: boolean; cpu: boolean } {
  const samples = records.filter((record): record is SoakSampleRecord => record.kind === 'sample');
  return { anon: samples.some((sample) => sample.anonBytes !== undefined), cpu: samples.some((sample) => sample.cpuNanos !== undefined) };
}

/**
 * Every working-set sample of each kind of container, as the kubelet and the
 * scheduler count memory, with its anonymous part and the CPU between two
 * samples where recorded: what the hook's requests and limit are held against.
 */
function workingSetTable(records: readonly SoakRecord[]): string[] {
  const { anon: withAnon, cpu: withCpu } = sampled(records);
  const spread = (values: number[], digits: number) => {
    const { p50, p99, max } = spreadOf(values);
    return values.length === 0 ? ['—', '—', '—'] : [p50.toFixed(digits), p99.toFixed(digits), max.toFixed(digits)];
  };
  const lines = [
    row([
      'container',
      'samples',
      'working set MiB p50',
      'p99',
      'max',
      ...(withAnon ? ['of it anonymous MiB p50', 'p99', 'max'] : []),
      ...(withCpu ? ['CPU mCPU p50', 'p99', 'max'] : []),
    ]),
    row(['---', '---:', '---:', '---:', '---:', ...(withAnon ? ['---:', '---:', '---:'] : []), ...(withCpu ? ['---:', '---:', '---:'] : [])]),
  ];
  const mibOf = (series: Map<string, { bytes: number }[]>) => [...series.values()].flat().map((sample) => sample.bytes / 2 ** 20);
  for (const kind of ['hook', 'webhook'] as const) {
    const mib = mibOf(memorySeries(records, kind));
    lines.push(
      row([
        KIND_LABELS[kind],
        mib.length,
        ...spread(mib, 1),
        ...(withAnon ? spread(mibOf(memorySeries(records, kind, 'anon')), 1) : []),
        ...(withCpu ? spread(cpuMilliCores(records, kind), 1) : []),
      ]),
    );
  }
  return lines;
}

/** Whether a run that grew went on growing over its later half, where that half was long enough to judge. */
const laterHalfNote = (result: LeakResult): string =>
  result.laterSlope === undefined
    ? ''
    : `; over its later half ${mibPerHour(result.laterSlope.bytesPerHour)} MiB/h, ${result.laterSlope.bytesPerHour > result.thresholdBytesPerHour ? 'still growing' : 'levelled off'}`;

/** A check that found a split brain: where, when, of which kinds, and the checker's sentence for each where the record keeps it. */
function splitBrainFinding(check: SoakCheckRecord): string[] {
  const mode = check.withLeaderhook ? 'with leaderhook' : 'without leaderhook';
  const kinds = check.splitBrainKinds?.length ? ` (${check.splitBrainKinds.join(', ')})` : '';
  return [
    `- ${check.namespace} (${mode}): ${check.splitBrain} split brain in the check at ${hoursMinutes(check.atMs)}${kinds}`,
    ...(check.splitBrainFindings ?? []).map((sentence) => `  - ${sentence}`),
  ];
}

/** The split brains, the runs that grew, and the restarts and watches behind a target not met, for whoever looks into them. */
function findings(totals: SoakTotals, leaks: Leaks): string[] {
  const lines = [
    ...totals.splitBrainChecks.flatMap(splitBrainFinding),
    ...MEMORY_PARTS_OF(leaks).flatMap((part) =>
      [...leaks.hook[part], ...leaks.webhook[part]]
        .filter((result) => result.verdict === 'grows')
        .map(
          (result) =>
            `- ${result.key}${part === 'workingSet' ? '' : ` ${PART_LABELS[part].target}`} grows ${mibPerHour(result.slope!.bytesPerHour)} MiB/h (r² ${result.slope!.r2.toFixed(2)})${laterHalfNote(result)}`,
        ),
    ),
    ...totals.uncausedRestarts.map(
      (restart) => `- ${restart.namespace}/${restart.pod}/${restart.container} restarted, no fault to cause it (seen at ${hoursMinutes(restart.seenAtMs)})`,
    ),
    ...totals.watchesDown.map((down) => `- ${down.pod}: watch ${down.watch} down since ${hoursMinutes(down.sinceMs)}`),
  ];
  return lines.length === 0 ? [] : ['## Findings', '', ...lines, ''];
}

/** The whole of docs/soak.md for one run's record. */
export function renderSoakMarkdown(records: readonly SoakRecord[]): string {
  const run = soakRunOf(records);
  const totals = soakTotals(records);
  const leaksOf = (kind: 'hook' | 'webhook') => ({
    workingSet: leakVerdict(memorySeries(records, kind)),
    anon: leakVerdict(memorySeries(records, kind, 'anon')),
    heapAfterGc: leakVerdict(heapAfterMajorGcs(records, kind)),
  });
  const leaks: Leaks = { hook: leaksOf('hook'), webhook: leaksOf('webhook') };
  const judgedParts = MEMORY_PARTS_OF(leaks);
  const results = targets(records, totals, leaks);
  const met = results.filter((result) => result.verdict === 'met').length;
  const sum = (outcome: 'applied' | 'skipped' | 'failed') =>
    totals.faults.reduce((total, counts) => total + counts[outcome].with + counts[outcome].without + counts[outcome].cluster, 0);
  const namespaces = (withLeaderhook: boolean) =>
    new Set(
      records
        .filter((record): record is SoakCheckRecord => record.kind === 'check' && record.withLeaderhook === withLeaderhook)
        .map((record) => record.namespace),
    ).size;
  const lines = [
    '<!-- Generated by test/bench/soak-report.ts from the record of `npm run bench:soak`; do not edit, run the soak again. -->',
    '',
    // a soak whose schedule drew no fault (a long --mean-interval) measures the processes left alone
    `# Soak: ${records.some((record) => record.kind === 'fault') ? 'random faults' : 'no fault'}, with leaderhook and without`,
    '',
    '```sh',
    run.command,
    '```',
    '',
    `Run ${when(run)}; asked for ${hoursMinutes(run.durationMs)}, seed ${run.seed}${run.nodes === undefined ? '' : `; ${run.nodes} node${run.nodes === 1 ? '' : 's'}`}.`,
    `${sum('applied')} faults applied, ${sum('skipped')} skipped (nothing to hit at that moment)${sum('failed') > 0 ? `, ${sum('failed')} failed (applying them threw: the record's fault lines say why)` : ''}, in namespaces checked: ${namespaces(true)} with leaderhook, ${namespaces(false)} without.`,
    '',
    '## Faults',
    '',
    ...faultTable(totals.faults),
    '',
    ...leaderlessSection(records),
    '## Targets',
    '',
    `Reported, not asserted: ${met} of ${results.length} met.`,
    '',
    row(['target', 'measured', 'verdict']),
    row(['---', '---', '---']),
    ...results.map((result) => row([result.target, result.measured, result.verdict === 'met' ? 'met' : `**${result.verdict}**`])),
    '',
    '## Memory',
    '',
    'The least-squares slope of the working set of each run of a container (a restart starts a new run), against',
    `${mibPerHour(LEAK_THRESHOLD_BYTES_PER_HOUR)} MiB/h: not zero, since a garbage-collected heap is a sawtooth whose fitted slope is never exactly 0.`,
    `A run shorter than ${MIN_SLOPE_SPAN_MS / 60_000} min is not judged. A run that grew is named in the findings with the slope of its later half`,
    `where that half spans ${MIN_SLOPE_SPAN_MS / 60_000} min or more: a warm-up levels off there, a leak goes on; the whole run stays the verdict.`,
    ...(judgedParts.includes('anon')
      ? [
          'The anonymous part of the working set is judged apart: the working set also counts the page cache of the files',
          "a container read, which the kernel takes back at the limit; the anonymous part is the process's own memory, where a leak shows.",
        ]
      : []),
    ...(judgedParts.includes('heapAfterGc')
      ? [
          "The heap after a major collection is a process's V8 heap in use at the first reading after its count of major collections went up:",
          "the live heap, which a leak raises; the working set also rises between major collections, which come about an hour apart at a soak's pace.",
        ]
      : []),
    '',
    ...memoryTable(leaks),
    '',
    `Every sample of the working set over the run (cgroup usage less inactive file pages: the figure the kubelet evicts by)${sampled(records).cpu ? ", and the CPU each container used between two of its samples in a row (the minute's average)" : ''}:`,
    '',
    ...workingSetTable(records),
    '',
    ...findings(totals, leaks),
  ];
  return lines.join('\n');
}

export async function writeSoakReport(records: readonly SoakRecord[], file: string): Promise<void> {
  await writeFile(file, renderSoakMarkdown(records));
}
