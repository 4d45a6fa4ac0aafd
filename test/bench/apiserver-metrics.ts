/**
 * The API server's own figures, read from its /metrics (Prometheus text
 * exposition) and summed the way bench:scale reports them: requests and
 * response bytes by verb and resource, watch events and their bytes by kind,
 * open watches, process CPU and resident memory. Pure: the benchmark fetches
 * the text; tests feed it samples.
 *
 * The parser reads the one line form the API server writes
 * (`name{label="value",...} number`); comments and other series are skipped.
 */

/** One exposition line: metric name, labels, value. */
export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const lineForm = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelForm = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The series of `text` whose name is in `names`; a line in another form throws, naming it. */
export function parseExposition(text: string, names: ReadonlySet<string>): Series[] {
  const out: Series[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = lineForm.exec(line);
    if (!m) throw new Error(`unreadable metrics line: ${line.slice(0, 200)}`);
    const name = m[1] as string;
    if (!names.has(name)) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(labelForm)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name, labels, value: Number(m[3]) });
  }
  return out;
}

/** What one read of /metrics says, summed by the keys bench:scale reports. */
export interface ApiServerSample {
  /** Seconds since the epoch, when it was read. */
  at: number;
  /** `VERB resource` → requests so far (apiserver_request_total). */
  requests: Record<string, number>;
  /** `VERB resource` → response bytes so far (apiserver_response_sizes_sum; a WATCH's whole stream is counted only once it has ended). */
  responseBytes: Record<string, number>;
  /** resource → watch events sent so far, to every watcher (apiserver_watch_events_sizes_count). */
  watchEvents: Record<string, number>;
  /** resource → watch event bytes sent so far (apiserver_watch_events_sizes_sum). */
  watchEventBytes: Record<string, number>;
  /** resource → watches open now (apiserver_longrunning_requests, verb WATCH). */
  watches: Record<string, number>;
  cpuSeconds: number;
  residentBytes: number;
}

export const SAMPLED_SERIES: ReadonlySet<string> = new Set([
  'apiserver_request_total',
  'apiserver_response_sizes_sum',
  'apiserver_watch_events_sizes_count',
  'apiserver_watch_events_sizes_sum',
  'apiserver_longrunning_requests',
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
]);

function add(into: Record<string, number>, key: string, value: number): void {
  into[key] = (into[key] ?? 0) + value;
}

/** A sample from the text of /metrics read at `at`. */
export function sampleOf(text: string, at: number): ApiServerSample {
  const s: ApiServerSample = { at, requests: {}, responseBytes: {}, watchEvents: {}, watchEventBytes: {}, watches: {}, cpuSeconds: 0, residentBytes: 0 };
  for (const { name, labels, value } of parseExposition(text, SAMPLED_SERIES)) {
    const verbResource = `${labels.verb ?? '?'} ${labels.subresource ? `${labels.resource}/${labels.subresource}` : (labels.resource ?? '?')}`;
    switch (name) {
      case 'apiserver_request_total':
        add(s.requests, verbResource, value);
        break;
      case 'apiserver_response_sizes_sum':
        add(s.responseBytes, verbResource, value);
        break;
      // labelled by resource; `kind` where a version names it so
      case 'apiserver_watch_events_sizes_count':
        add(s.watchEvents, labels.resource ?? labels.kind ?? '?', value);
        break;
      case 'apiserver_watch_events_sizes_sum':
        add(s.watchEventBytes, labels.resource ?? labels.kind ?? '?', value);
        break;
      case 'apiserver_longrunning_requests':
        if (labels.verb === 'WATCH') add(s.watches, labels.resource ?? '?', value);
        break;
      case 'process_cpu_seconds_total':
        s.cpuSeconds = value;
        break;
      case 'process_resident_memory_bytes':
        s.residentBytes = value;
        break;
    }
  }
  return s;
}

/** Per-second rates between two samples of one API server, and the state at the second. */
export interface ApiServerRates {
  seconds: number;
  /** `VERB resource` → requests per second; only keys that moved. */
  requestsPerSecond: Record<string, number>;
  requestBytesPerSecond: number;
  watchEventsPerSecond: Record<string, number>;
  watchBytesPerSecond: number;
  /** CPU cores busy on average (CPU seconds per second). */
  cpuCores: number;
  residentBytes: number;
  /** Watches open at the second sample, all resources. */
  watches: number;
  /** The same by resource. */
  watchesByResource: Record<string, number>;
}

function deltas(a: Record<string, number>, b: Record<string, number>, seconds: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(b)) {
    const d = value - (a[key] ?? 0);
    if (d > 0) out[key] = d / seconds;
  }
  return out;
}

const total = (r: Record<string, number>): number => Object.values(r).reduce((n, v) => n + v, 0);

/** The rates from `a` to `b`; throws when `b` is not later (a counter reset would show as a negative rate). */
export function ratesBetween(a: ApiServerSample, b: ApiServerSample): ApiServerRates {
  const seconds = b.at - a.at;
  if (!(seconds > 0)) throw new Error(`samples out of order: ${a.at} then ${b.at}`);
  if (b.cpuSeconds < a.cpuSeconds) throw new Error('the API server restarted between two samples (its CPU counter went back)');
  return {
    seconds,
    requestsPerSecond: deltas(a.requests, b.requests, seconds),
    requestBytesPerSecond: total(deltas(a.responseBytes, b.responseBytes, seconds)),
    watchEventsPerSecond: deltas(a.watchEvents, b.watchEvents, seconds),
    watchBytesPerSecond: total(deltas(a.watchEventBytes, b.watchEventBytes, seconds)),
    cpuCores: (b.cpuSeconds - a.cpuSeconds) / seconds,
    residentBytes: b.residentBytes,
    watches: total(b.watches),
    watchesByResource: b.watches,
  };
}

/** Counts between two samples (not per second): what one burst, such as hooks starting, cost. */
export interface ApiServerCost {
  seconds: number;
  requests: Record<string, number>;
  responseBytes: number;
  /** The same by `VERB resource`: which requests the bytes answered. */
  responseBytesByRequest: Record<string, number>;
  watchEventBytes: number;
  cpuSeconds: number;
}

export function costBetween(a: ApiServerSample, b: ApiServerSample): ApiServerCost {
  const r = ratesBetween(a, b);
  const times = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v * r.seconds)]));
  return {
    seconds: r.seconds,
    requests: times(r.requestsPerSecond),
    responseBytes: Math.round(r.requestBytesPerSecond * r.seconds),
    responseBytesByRequest: deltas(a.responseBytes, b.responseBytes, 1),
    watchEventBytes: Math.round(r.watchBytesPerSecond * r.seconds),
    cpuSeconds: b.cpuSeconds - a.cpuSeconds,
  };
}

/** The sum over keys; rates and counts alike. */
export const sumOf = total;
