/**
 * bench:scale's reading of the API server's /metrics and what it derives:
 * the exposition lines it sums, the rates between two samples, the
 * per-hook difference, and its refusals (an unreadable line, samples out of
 * order, an API server restarted between them).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { costBetween, parseExposition, ratesBetween, SAMPLED_SERIES, sampleOf } from '../bench/apiserver-metrics.ts';
import {
  perHook,
  renderExtrapolation,
  renderScaleBlock,
  renderScaleTables,
  replaceScaleBlock,
  type ScaleRecord,
  type ScaleRun,
  startAdded,
} from '../bench/scale-report.ts';

function exposition(o: {
  getLeases: number;
  listPods: number;
  leaseEvents: number;
  leaseEventBytes: number;
  watches: number;
  cpu: number;
  rss: number;
}): string {
  return [
    '# HELP apiserver_request_total Counter of apiserver requests',
    '# TYPE apiserver_request_total counter',
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="GET",version="v1"} ${o.getLeases}`,
    `apiserver_request_total{code="404",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="GET",version="v1"} 1`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} ${o.listPods}`,
    'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 7',
    `apiserver_response_sizes_sum{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} ${o.listPods * 1000}`,
    `apiserver_watch_events_sizes_count{group="coordination.k8s.io",resource="leases",version="v1"} ${o.leaseEvents}`,
    `apiserver_watch_events_sizes_sum{group="coordination.k8s.io",resource="leases",version="v1"} ${o.leaseEventBytes}`,
    `apiserver_longrunning_requests{component="apiserver",group="",resource="leases",scope="namespace",subresource="",verb="WATCH",version="v1"} ${o.watches}`,
    'apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="log",verb="CONNECT",version="v1"} 3',
    `process_cpu_seconds_total ${o.cpu}`,
    `process_resident_memory_bytes ${o.rss}`,
    'go_goroutines 1234',
    '',
  ].join('\n');
}

const before = sampleOf(exposition({ getLeases: 100, listPods: 10, leaseEvents: 50, leaseEventBytes: 25_000, watches: 4, cpu: 10, rss: 400 * 2 ** 20 }), 1000);
const after = sampleOf(
  exposition({ getLeases: 160, listPods: 30, leaseEvents: 650, leaseEventBytes: 325_000, watches: 14, cpu: 13, rss: 410 * 2 ** 20 }),
  1060,
);

describe('the API server sample', () => {
  test('sums requests by verb and resource across codes, keeps subresources apart, and counts only WATCH as watches', () => {
    assert.equal(before.requests['GET leases'], 101);
    assert.equal(before.requests['PUT pods/status'], 7);
    assert.equal(before.watches.leases, 4);
    assert.equal(before.watches.pods, undefined, 'a log stream is long-running but no watch');
    assert.equal(before.cpuSeconds, 10);
  });

  test('rates over the seconds between samples; only what moved', () => {
    const r = ratesBetween(before, after);
    assert.equal(r.seconds, 60);
    assert.deepEqual(r.requestsPerSecond, { 'GET leases': 1, 'LIST pods': 20 / 60 });
    assert.equal(r.requestBytesPerSecond, (20 * 1000) / 60);
    assert.deepEqual(r.watchEventsPerSecond, { leases: 10 });
    assert.equal(r.watchBytesPerSecond, 5000);
    assert.equal(r.cpuCores, 0.05);
    assert.equal(r.watches, 14);
    assert.deepEqual(costBetween(before, after).requests, { 'GET leases': 60, 'LIST pods': 20 });
    assert.deepEqual(costBetween(before, after).responseBytesByRequest, { 'LIST pods': 20_000 }, 'response bytes by request, only what moved');
  });

  test('refuses samples out of order, an API server restarted between them, and a line it cannot read', () => {
    assert.throws(() => ratesBetween(after, before), /out of order/);
    const restarted = sampleOf(exposition({ getLeases: 1, listPods: 1, leaseEvents: 1, leaseEventBytes: 1, watches: 1, cpu: 2, rss: 1 }), 1100);
    assert.throws(() => ratesBetween(after, restarted), /restarted/);
    assert.throws(() => parseExposition('apiserver_request_total{verb="GET"}\n', SAMPLED_SERIES), /unreadable metrics line: apiserver_request_total/);
  });
});

describe('the per-hook figures', () => {
  const idle = ratesBetween(before, after);
  const run: ScaleRun = {
    replicas: 20,
    hooks: 10,
    namespaces: 1,
    without: idle,
    with: { ...idle, cpuCores: 0.15, watches: 44, watchEventsPerSecond: { leases: 15 }, residentBytes: idle.residentBytes + 10 * 2 ** 20 },
    // 10 s of starts, over a baseline of 1 GET leases and 1/3 LIST pods a second, 333 response bytes a second, 0.05 cores;
    // the WATCH pods bytes are a watch of someone else's that ended in the window
    start: {
      seconds: 10,
      requests: { 'GET leases': 40, 'POST selfsubjectaccessreviews': 130, 'LIST pods': 2, 'WATCH pods': 10 },
      responseBytes: 10_000,
      responseBytesByRequest: { 'GET leases': 4_000, 'POST selfsubjectaccessreviews': 5_200, 'LIST pods': 800, 'WATCH pods': 90_000 },
      watchEventBytes: 0,
      cpuSeconds: 1.5,
      readyMsP50: 900,
      readyMsP90: 1500,
    },
    hook: { cpuMsPerSecondP50: 0.5, cpuMsPerSecondP90: 1, cpuMsPerSecondTotal: 5, rssKiBP50: 60_000, rssAnonKiBP50: 18_000, rssAnonKiBMax: 19_000, exited: 0 },
  };

  test('is the difference with and without hooks divided by their number', () => {
    const h = perHook(run);
    assert.equal(Math.round(h.cpuMilliCores), 10);
    assert.equal(h.watches, 3);
    assert.equal(h.watchEventsPerSecond, 0.5);
    assert.equal(h.residentKiB, 1024);
    assert.equal(h.startRequests, 17);
  });

  test("a start's cost is what it added over the operators' own load in as many seconds; a count below that is 0", () => {
    assert.deepEqual(startAdded(run).requests, { 'GET leases': 30, 'POST selfsubjectaccessreviews': 130, 'WATCH pods': 10 });
    // GET leases: 30 of its 40 requests added, so 3/4 of its 4,000 bytes; every review; no LIST pods; no WATCH bytes
    assert.equal(startAdded(run).responseBytes, 3_000 + 5_200);
    assert.equal(Math.round(perHook(run).startCpuMs), 100);
  });

  test('renders every run, and the extrapolation from the largest run of each namespace size', () => {
    const record: ScaleRecord = {
      command: 'npm run bench:scale',
      date: '2026-12-03',
      machine: '2 cores',
      kubernetes: 'v1.34.4',
      windowSeconds: 60,
      idle,
      runs: [run],
    };
    const tables = renderScaleTables(record);
    assert.match(tables, /\| 20 \| 10 \| 1 \| 50 → 150 \| 10\.00 \|/);
    const extrapolated = renderExtrapolation(record);
    assert.match(extrapolated, /\| 20 \| 10 \| 10,000 \| 100\.0 \| 9\.8 \| 30,000 \|/);
    assert.match(extrapolated, /\| 20 \| 10 \| 100,000 \|/);
  });

  test("the header names the cluster's nodes; a record from before they were kept was of one node", () => {
    const record: ScaleRecord = {
      command: 'npm run bench:scale',
      date: '2026-12-05',
      machine: '2 cores',
      kubernetes: 'v1.34.4',
      windowSeconds: 30,
      idle,
      runs: [run],
    };
    assert.match(renderScaleBlock(record), /Kubernetes v1\.34\.4, one node;/);
    assert.match(renderScaleBlock({ ...record, nodes: 3 }), /Kubernetes v1\.34\.4, 3 nodes;/);
  });
});

describe('docs/scale.md', () => {
  test('its generated block is what the committed record renders (node test/bench/scale-report.ts docs/scale-record.json --doc docs/scale.md)', () => {
    const repo = join(import.meta.dirname, '..', '..');
    const record = JSON.parse(readFileSync(join(repo, 'docs/scale-record.json'), 'utf8')) as ScaleRecord;
    const doc = readFileSync(join(repo, 'docs/scale.md'), 'utf8');
    assert.equal(replaceScaleBlock(doc, record), doc);
  });
});
