/**
 * docs/soak.md from a small record (test/testdata/soak/sample.jsonl, 45 min):
 * the whole rendering against a golden, and the targets turning with the
 * numbers behind them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parseSoakRecords, type SoakRecord } from '../bench/soak-analysis.ts';
import { renderSoakMarkdown } from '../bench/soak-report.ts';

/**
 * One namespace per mode; every fault kind once (an eviction skipped); a
 * crash and a hook kill each followed by their restart, and a webhook restart
 * with no fault; a hook flat after its restart and a webhook growing 2 MiB/h.
 */
const sample = parseSoakRecords(readFileSync(new URL('../testdata/soak/sample.jsonl', import.meta.url), 'utf8'));
const golden = readFileSync(new URL('../testdata/soak/report.md', import.meta.url), 'utf8');

const cells = (line: string | undefined) =>
  (line ?? '')
    .split('|')
    .slice(1, -1)
    .map((cell) => cell.trim());
const targetRow = (markdown: string, target: string) => cells(markdown.split('\n').find((line) => line.startsWith(`| ${target} |`)));

test('the record renders as the golden report', () => {
  assert.equal(renderSoakMarkdown(sample), golden);
});

test('a record with no fault is titled as such: the processes were left alone', () => {
  assert.match(renderSoakMarkdown(sample), /\n# Soak: random faults, with leaderhook and without\n/);
  const quiet = renderSoakMarkdown(sample.filter((record) => record.kind !== 'fault'));
  assert.match(quiet, /\n# Soak: no fault, with leaderhook and without\n/);
  assert.match(quiet, /\n0 faults applied, 0 skipped/);
});

test('the anonymous part of the working set is shown where the samples have it, and only then', () => {
  const header = (markdown: string) => cells(markdown.split('\n').find((line) => line.startsWith('| container | samples | working set MiB p50 |')));
  assert.equal(header(renderSoakMarkdown(sample)).length, 5, 'a record without it renders as before');
  const withAnon = sample.map((record) => (record.kind === 'sample' ? { ...record, anonBytes: record.workingSetBytes / 2 } : record));
  const markdown = renderSoakMarkdown(withAnon);
  assert.deepEqual(header(markdown).slice(5), ['of it anonymous MiB p50', 'p99', 'max']);
  for (const kind of ['release hook', 'webhook']) {
    const [, , workingSetP50, , workingSetMax, anonP50, , anonMax] = cells(
      markdown.split('\n').find((line) => line.startsWith(`| ${kind} | `) && line.split('|').length === 10),
    );
    assert.equal(Number(anonP50), Number((Number(workingSetP50) / 2).toFixed(1)), `${kind}: half the working set, p50`);
    assert.equal(Number(anonMax), Number((Number(workingSetMax) / 2).toFixed(1)), `${kind}: half the working set, max`);
  }
});

test('with the anonymous part recorded, its slope is judged apart: page cache growing is not a leak, anonymous memory growing is', () => {
  const hookTarget = 'release hook anonymous memory flat (slope ≤ 1.00 MiB/h)';
  assert.deepEqual(targetRow(renderSoakMarkdown(sample), hookTarget), [], 'a record without it has no such target');
  // the same fixed anonymous part under every sample: whatever the working set does, it is flat
  const flatAnon = sample.map((record) => (record.kind === 'sample' ? { ...record, anonBytes: 20 * 2 ** 20 } : record));
  const flat = renderSoakMarkdown(flatAnon);
  assert.equal(targetRow(flat, hookTarget)[2], 'met');
  assert.equal(targetRow(flat, 'webhook anonymous memory flat (slope ≤ 1.00 MiB/h)')[2], 'met');
  assert.equal(targetRow(flat, 'webhook memory flat (slope ≤ 1.00 MiB/h)')[2], '**not met**', 'the working set is still judged as before');
  assert.ok(
    flat.split('\n').some((line) => line.startsWith('| webhook anonymous | ')),
    'the memory table has its row',
  );
  // anonymous memory that is the working set less a fixed page cache grows as it does (the webhook's 2 MiB/h), and is named in the findings
  const growing = renderSoakMarkdown(
    sample.map((record) => (record.kind === 'sample' ? { ...record, anonBytes: record.workingSetBytes - 10 * 2 ** 20 } : record)),
  );
  assert.equal(targetRow(growing, 'webhook anonymous memory flat (slope ≤ 1.00 MiB/h)')[2], '**not met**');
  assert.match(growing, /\n- \S+\/webhook#\d+ anonymous memory grows \d+\.\d\d MiB\/h/);
});

test("a run that grew is told with its later half's slope where that half is long enough to judge", () => {
  // the webhook of the sample record, anonymous memory read each minute for 80 min: 8 MiB of warm-up over 30 min, then flat
  const warmUp: SoakRecord[] = Array.from({ length: 81 }, (_, i) => ({
    kind: 'sample',
    atMs: i * 60_000,
    namespace: 'leaderhook',
    pod: 'leaderhook-webhook-y',
    container: 'webhook',
    workingSetBytes: 40 * 2 ** 20,
    anonBytes: (20 + (8 * Math.min(i, 30)) / 30) * 2 ** 20,
    restarts: 0,
  }));
  const markdown = renderSoakMarkdown([...sample, ...warmUp]);
  assert.match(
    markdown,
    /\n- leaderhook\/leaderhook-webhook-y\/webhook#0 anonymous memory grows \d+\.\d\d MiB\/h \(r² \d\.\d\d\); over its later half 0\.00 MiB\/h, levelled off\n/,
  );
  assert.equal(targetRow(markdown, 'webhook anonymous memory flat (slope ≤ 1.00 MiB/h)')[2], '**not met**', 'the whole run stays the verdict');
});

test('with heap readings, the heap after each major collection is judged: flat floors under a rising working set are met, rising floors are not', () => {
  const target = 'webhook heap after a major collection flat (slope ≤ 1.00 MiB/h)';
  assert.deepEqual(targetRow(renderSoakMarkdown(sample), target), [], 'a record without heap readings has no such target');
  // the webhook of the sample record, read every 5 min over 45 min, a major collection every 15 min
  const heaps = (floorGrowthMiBPerHour: number): SoakRecord[] =>
    Array.from({ length: 10 }, (_, i) => ({
      kind: 'heap',
      atMs: i * 300_000,
      namespace: 'leaderhook',
      pod: 'leaderhook-webhook-x',
      container: 'webhook',
      heapUsedBytes: (12 + (floorGrowthMiBPerHour * i * 300_000) / 3_600_000 + (i % 3) * 0.5) * 2 ** 20,
      majorGcs: 3 + Math.floor(i / 3),
      restarts: 0,
    }));
  const flat = renderSoakMarkdown([...sample, ...heaps(0)]);
  assert.equal(targetRow(flat, target)[2], 'met');
  assert.equal(targetRow(flat, 'webhook memory flat (slope ≤ 1.00 MiB/h)')[2], '**not met**', 'the working set is judged as before');
  assert.ok(flat.split('\n').some((line) => line.startsWith('| webhook heap after a major collection | 1 | 1 | 0.00 |')));
  assert.match(flat, /The heap after a major collection is a process's V8 heap in use/);
  const rising = renderSoakMarkdown([...sample, ...heaps(4)]);
  assert.equal(targetRow(rising, target)[2], '**not met**');
  assert.match(rising, /\n- leaderhook\/leaderhook-webhook-x\/webhook#0 heap after a major collection grows 4\.00 MiB\/h/);
});

test('CPU columns appear where the samples have CPU time, and only then', () => {
  const header = (markdown: string) => cells(markdown.split('\n').find((line) => line.startsWith('| container | samples | working set MiB p50 |')));
  assert.ok(!header(renderSoakMarkdown(sample)).includes('CPU mCPU p50'));
  // every container's CPU time grows 0.6 s a minute: 10 mCPU between any two samples in a row
  const withCpu = sample.map((record) => (record.kind === 'sample' ? { ...record, cpuNanos: record.atMs * 1e4 } : record));
  const markdown = renderSoakMarkdown(withCpu);
  assert.deepEqual(header(markdown).slice(5), ['CPU mCPU p50', 'p99', 'max']);
  const hook = cells(markdown.split('\n').find((line) => line.startsWith('| release hook | ') && line.split('|').length === 10));
  assert.deepEqual(hook.slice(5), ['10.0', '10.0', '10.0']);
});

test('the same record in another order renders the same bytes, and one without its run line is refused', () => {
  assert.equal(renderSoakMarkdown([...sample].reverse()), golden);
  assert.throws(() => renderSoakMarkdown(sample.filter((record) => record.kind !== 'run')), /exactly one "run" line; this one has 0/);
});

test('a fault whose applying threw is counted as failed, apart from the skipped, and named in the summary; none failed adds nothing', () => {
  assert.ok(!renderSoakMarkdown(sample).includes('failed'), 'the golden record has no failed fault');
  const markdown = renderSoakMarkdown([
    ...sample,
    {
      kind: 'fault',
      atMs: 1_000_000,
      fault: 'crash-operator',
      target: 'p',
      namespace: 'soak-with',
      withLeaderhook: true,
      outcome: 'failed',
      detail: 'no such process',
    },
  ]);
  assert.match(markdown, /, 1 failed \(applying them threw: the record's fault lines say why\),/);
  const row = cells(markdown.split('\n').find((line) => line.includes('operator container crashed')));
  assert.ok(
    row.some((cell) => /\(1 failed\)$/.test(cell)),
    `the operator crash's row counts it as failed: ${row.join(' | ')}`,
  );
});

test("a node drain is a cluster-wide fault of its own row, and the run's nodes are told where the record has them", () => {
  assert.doesNotMatch(renderSoakMarkdown(sample), /node/, 'a record of before nodes were kept says nothing of them');
  const markdown = renderSoakMarkdown([
    ...sample.map((record) => (record.kind === 'run' ? { ...record, nodes: 3 } : record)),
    { kind: 'fault', atMs: 1_200_000, fault: 'drain-node', target: 'leaderhook-node-2', namespace: '', withLeaderhook: false, outcome: 'applied' },
  ]);
  assert.match(markdown, /, seed 42; 3 nodes\./);
  assert.deepEqual(cells(markdown.split('\n').find((line) => line.startsWith('| node drained'))), ['node drained, then uncordoned', '—', '—', '1']);
});

test('split brain or a lock held by a dead pod with leaderhook turns its target; the same without leaderhook does not', () => {
  const check = (withLeaderhook: boolean, splitBrain: number, lockHeldByDeadPod: number): SoakRecord => ({
    kind: 'check',
    atMs: 2_000_000,
    namespace: withLeaderhook ? 'soak-with' : 'soak-without',
    withLeaderhook,
    splitBrain,
    lockHeldByDeadPod,
    leaderlessMs: 0,
  });
  const baselineOnly = renderSoakMarkdown([...sample, check(false, 2, 1)]);
  assert.deepEqual(targetRow(baselineOnly, '0 split brain'), ['0 split brain', '0 in 3 checks with leaderhook (2 in 3 without)', 'met']);
  const withHook = renderSoakMarkdown([...sample, check(true, 1, 1)]);
  assert.deepEqual(targetRow(withHook, '0 split brain'), ['0 split brain', '1 in 4 checks with leaderhook (0 in 2 without)', '**not met**']);
  assert.equal(targetRow(withHook, '0 lock left held by a pod that can never run')[2], '**not met**');
});

test('stretches a relisted watch left unseen are told beside the split brain, and do not turn it', () => {
  const markdown = renderSoakMarkdown([
    ...sample,
    { kind: 'check', atMs: 2_000_000, namespace: 'soak-with', withLeaderhook: true, splitBrain: 0, unobserved: 2, lockHeldByDeadPod: 0, leaderlessMs: 0 },
  ]);
  assert.deepEqual(targetRow(markdown, '0 split brain').slice(1), [
    '0 in 4 checks with leaderhook (0 in 2 without); not seen, a watch having relisted: 2 stretches with leaderhook, 0 without',
    'met',
  ]);
});

test('leaderless longer with leaderhook than without, and a watch left down, are not met', () => {
  const markdown = renderSoakMarkdown([
    ...sample,
    { kind: 'check', atMs: 2_000_000, namespace: 'soak-with', withLeaderhook: true, splitBrain: 0, lockHeldByDeadPod: 0, leaderlessMs: 20_000 },
    { kind: 'watch', atMs: 2_500_000, pod: 'lfl-a-2', watch: 'pods', up: false },
  ]);
  assert.deepEqual(targetRow(markdown, 'no operator without a leader for longer than without leaderhook').slice(1), [
    'longest 20.00 s with leaderhook, 16.50 s without',
    '**not met**',
  ]);
  assert.deepEqual(targetRow(markdown, 'no watch left disconnected').slice(1), ['1 down at the end', '**not met**']);
  assert.ok(markdown.includes('- lfl-a-2: watch pods down since 42 min'));
});

test('with no samples and no watches, the memory, watch and restart targets are not measured rather than met', () => {
  const markdown = renderSoakMarkdown(sample.filter((record) => record.kind !== 'sample' && record.kind !== 'watch'));
  for (const target of [
    'release hook memory flat (slope ≤ 1.00 MiB/h)',
    'webhook memory flat (slope ≤ 1.00 MiB/h)',
    'no watch left disconnected',
    'no hook or webhook restart but those a fault caused',
  ]) {
    assert.equal(targetRow(markdown, target)[2], '**not measured**', target);
  }
  assert.ok(!markdown.includes('## Findings'));
});

test('with gap records, the leaderless target is judged fault by fault, and a stretch the baseline cannot have turns it', () => {
  const gap = (withLeaderhook: boolean, fromMs: number, ms: number): SoakRecord => ({
    kind: 'gap',
    namespace: withLeaderhook ? 'soak-with' : 'soak-without',
    withLeaderhook,
    fromMs,
    toMs: fromMs + ms,
    ms,
    open: false,
  });
  const fault = (atMs: number, name: string, withLeaderhook: boolean): SoakRecord => ({
    kind: 'fault',
    atMs,
    fault: name,
    target: 'p',
    namespace: withLeaderhook ? 'soak-with' : 'soak-without',
    withLeaderhook,
    outcome: 'applied',
  });
  const faults = [fault(2_000_000, 'delete-leader', true), fault(2_000_000, 'delete-leader', false)];
  const even = renderSoakMarkdown([...sample, ...faults, gap(true, 2_001_000, 3_000), gap(false, 2_001_000, 16_000)]);
  assert.deepEqual(targetRow(even, 'no operator without a leader for longer than without leaderhook').slice(1), [
    'median after the same fault no longer with leaderhook for 1 of 1 faults (longest 0.80 s with leaderhook, 16.50 s without)',
    'met',
  ]);
  const lines = even.split('\n');
  const at = lines.indexOf('## Leaderless stretches');
  assert.ok(at > 0 && at < lines.indexOf('## Targets'), 'the section comes before the targets');
  assert.ok(lines.includes('| leader pod deleted | 1 | 3.00 s | 3.00 s | 1 | 16.00 s | 16.00 s |'));

  const longer = renderSoakMarkdown([...sample, ...faults, gap(true, 2_001_000, 17_000), gap(false, 2_001_000, 16_000)]);
  assert.equal(targetRow(longer, 'no operator without a leader for longer than without leaderhook')[2], '**not met**');
  const afterKill = renderSoakMarkdown([...sample, fault(2_000_000, 'kill-hook', true), gap(true, 2_001_000, 4_000)]);
  const row = targetRow(afterKill, 'no operator without a leader for longer than without leaderhook');
  assert.match(row[1] ?? '', /stretches with leaderhook after kill-hook, which the baseline has none of/);
  assert.equal(row[2], '**not met**');
});

test("a check that found a split brain is named in the findings, with the checker's sentence for each where the record keeps it", () => {
  const check = (withLeaderhook: boolean, extra: Partial<SoakRecord>): SoakRecord =>
    ({
      kind: 'check',
      atMs: 3_001_516,
      namespace: withLeaderhook ? 'soak-with' : 'soak-without',
      withLeaderhook,
      splitBrain: 0,
      lockHeldByDeadPod: 0,
      leaderlessMs: 0,
      ...extra,
    }) as SoakRecord;
  const sentence = 'process 7 of pod b (UID u-b) wrote heartbeats at revisions 40-44 after process 9 of pod a had written at 30-39';
  const markdown = renderSoakMarkdown([
    ...sample,
    check(false, { splitBrain: 2, splitBrainKinds: ['interleaved', 'seq-regressed'], splitBrainFindings: [sentence, 'the second'] }),
    check(true, { splitBrain: 1, splitBrainKinds: ['not-holder'] }),
    check(true, { atMs: 3_301_516 }),
  ]);
  const lines = markdown.split('\n');
  const at = lines.indexOf('## Findings');
  assert.deepEqual(lines.slice(at + 2, at + 6), [
    '- soak-without (without leaderhook): 2 split brain in the check at 50 min (interleaved, seq-regressed)',
    `  - ${sentence}`,
    '  - the second',
    '- soak-with (with leaderhook): 1 split brain in the check at 50 min (not-holder)',
  ]);
  assert.ok(!markdown.includes('the check at 55 min'), 'a check that found none is not named');
  assert.equal(targetRow(markdown, '0 split brain')[2], '**not met**');
});

for (const [report, record] of [
  ['docs/soak.md', 'docs/soak-record.jsonl'],
  ['docs/soak-quiet.md', 'docs/soak-quiet-record.jsonl'],
  ['docs/soak-nodes.md', 'docs/soak-nodes-record.jsonl'],
] as const) {
  test(`${report} is what its committed record renders (node test/bench/soak-render.ts ${record} --out ${report} after a layout change)`, () => {
    const records = parseSoakRecords(readFileSync(new URL(`../../${record}`, import.meta.url), 'utf8'));
    assert.equal(renderSoakMarkdown(records), readFileSync(new URL(`../../${report}`, import.meta.url), 'utf8'));
  });
}
