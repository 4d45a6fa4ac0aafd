/**
 * A lean HTTP/1.1-over-TLS load client for the webhook benchmark: keep-alive
 * connections that write one prepared request (headers and body in one
 * buffer) and read the answer (Content-Length or chunked, the two ways the
 * servers answer), nothing else. Node's http client costs several times
 * more CPU per request, and the client must not be what limits the servers.
 *
 * Two ways to load: `closedLoop` (each connection sends its next request when
 * the answer arrived: saturation) and `openLoop` (requests due at a fixed rate
 * whatever the answers do; latency counts from when a request was due, so a
 * server that falls behind shows it in its latency instead of slowing the
 * client down: no coordinated omission).
 */
import { connect, type TLSSocket } from 'node:tls';

export interface Target {
  port: number;
  ca: Buffer | string;
}

const CRLF2 = Buffer.from('\r\n\r\n');

/**
 * A connection idle this long is closed, as the API server's transport closes
 * a webhook connection (its idle timeout, 90 s) before the webhook's
 * keep-alive does (120 s): a client that reused one idle longer would race the
 * server closing it, and lose the request.
 */
export const CLIENT_IDLE_TIMEOUT_MS = 90_000;

/** One keep-alive connection, one request at a time. */
class Connection {
  readonly #socket: TLSSocket;
  #pending: Buffer = Buffer.alloc(0);
  #done: ((status: number, body: Buffer | undefined) => void) | undefined;
  #keepBody = false;
  #failed: ((error: Error) => void) | undefined;
  #closed = false;
  /** When the last answer came (or the connection opened): how long it sat idle before the next request. */
  #idleSince = performance.now();
  #idleBeforeRequestMs = 0;

  private constructor(socket: TLSSocket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () =>
      // the idle time says which close it was: one after the server's keep-alive timeout, or one while in use
      this.#fail(new Error(`connection closed by the server (idle ${idleText(this.#idleBeforeRequestMs)} before the request)`)),
    );
  }

  /**
   * Closed by the server, as a server closes a keep-alive connection left
   * idle (Node answers one that sent nothing for its request timeout with a
   * 408 and closes it), or failed: the pool opens another in its place, as an
   * HTTP client's transport does.
   */
  get closed(): boolean {
    return this.#closed;
  }

  /** How long it has been idle, as a client's transport counts it for its idle timeout. */
  get idleMs(): number {
    return this.#done === undefined ? performance.now() - this.#idleSince : 0;
  }

  static open(target: Target): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: target.port, ca: target.ca, ALPNProtocols: ['http/1.1'] }, () => {
        socket.off('error', reject);
        socket.setNoDelay(true);
        resolve(new Connection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Sends `request` (a whole HTTP request) and calls `done` with the status (and the body, when `keepBody`). */
  send(request: Buffer, done: (status: number, body: Buffer | undefined) => void, failed: (error: Error) => void, keepBody = false): void {
    this.#done = done;
    this.#failed = failed;
    this.#keepBody = keepBody;
    this.#idleBeforeRequestMs = performance.now() - this.#idleSince;
    this.#socket.write(request);
  }

  close(): void {
    this.#closed = true;
    this.#done = undefined;
    this.#failed = undefined;
    this.#socket.destroy();
  }

  #fail(error: Error): void {
    // a socket that errored is destroyed by Node as one the server closed is: neither carries another request
    this.#closed = true;
    const failed = this.#failed;
    this.#done = undefined;
    this.#failed = undefined;
    failed?.(error);
  }

  #onData(chunk: Buffer): void {
    // an answer to no request: the server closing an idle connection, which 'close' marks
    if (this.#done === undefined) return;
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const parsed = parseResponse(this.#pending, this.#keepBody);
    if (parsed === undefined) return;
    this.#pending = this.#pending.subarray(parsed.end);
    const done = this.#done;
    this.#done = undefined;
    // answered: a close from now on fails no request (the server closing an idle connection)
    this.#failed = undefined;
    this.#idleSince = performance.now();
    done?.(parsed.status, parsed.body);
  }
}

/** An idle time as a failure names it: to the second under 10 s, else to 10 s, so that failures of one kind count together. */
const idleText = (ms: number): string => (ms < 10_000 ? `${Math.floor(ms / 1000)} s` : `${Math.floor(ms / 10_000) * 10} s`);

/** One complete response at the start of `data`, or undefined while it is incomplete. */
export function parseResponse(data: Buffer, keepBody: boolean): { status: number; end: number; body: Buffer | undefined } | undefined {
  const headerEnd = data.indexOf(CRLF2);
  if (headerEnd < 0) return undefined;
  const head = data.toString('latin1', 0, headerEnd);
  const status = Number(head.slice(9, 12));
  const bodyStart = headerEnd + 4;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) {
    const end = bodyStart + Number(length[1]);
    if (data.length < end) return undefined;
    return { status, end, body: keepBody ? Buffer.from(data.subarray(bodyStart, end)) : undefined };
  }
  // a bodiless answer before the server closes the connection (Node's 408 for a request it timed out)
  if (/\r\nconnection:\s*close/i.test(head) && !/\r\ntransfer-encoding:/i.test(head))
    return { status, end: data.length, body: keepBody ? Buffer.alloc(0) : undefined };
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) throw new Error(`a response with neither Content-Length nor chunked encoding: ${head}`);
  const chunks: Buffer[] = [];
  let at = bodyStart;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(data.toString('latin1', at, lineEnd), 16);
    if (size === 0) {
      // No trailers from either server: the last chunk is followed by one empty line.
      if (data.length < lineEnd + 4) return undefined;
      return { status, end: lineEnd + 4, body: keepBody ? Buffer.concat(chunks) : undefined };
    }
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    if (keepBody) chunks.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** POST /mutate with `body`, as one buffer a connection writes again and again. */
export function mutateRequest(body: Buffer): Buffer {
  const head = `POST /mutate?timeout=5s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, */*\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

export interface LoadResult {
  /** Answered requests, and their latencies in ms (unsorted). */
  latencies: Float64Array;
  count: number;
  /** Answers that were not 200. */
  notOk: number;
  /** Requests that failed at the connection level: the sum of `failures`. */
  failed: number;
  /** Those failures by the error each met (its message), so that a count in a report says what it was. */
  failures: Record<string, number>;
  /** Open loop: requests that were due but never sent before the end (the server fell behind). */
  unsent: number;
  /** Open loop: the latency every unsent request had at least, at the end (ms since it was due; max over them). */
  unsentLatencyMs: number;
  elapsedS: number;
  /** CPU time of this (client) process over the run, as a share of the elapsed time. */
  clientCpu: number;
  /**
   * Open loop: the 99th percentile of how late this client's timer sent a
   * request that found an idle connection (ms after it was due). Counted in
   * the latencies like everything else; when it is large, so is the noise
   * from this machine, not the server.
   */
  sendLagP99Ms: number;
}

const countFailure = (failures: Record<string, number>, error: Error): void => {
  failures[error.message] = (failures[error.message] ?? 0) + 1;
};

const totalOf = (failures: Record<string, number>): number => Object.values(failures).reduce((sum, times) => sum + times, 0);

/** A loop's end: its connections closed, its time and this process's CPU over it, and its counts as one result. */
function finishLoad(
  pool: readonly Connection[],
  started: number,
  cpu: NodeJS.CpuUsage,
  counts: Omit<LoadResult, 'failed' | 'elapsedS' | 'clientCpu'>,
): LoadResult {
  const elapsedS = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  for (const connection of pool) connection.close();
  return { ...counts, failed: totalOf(counts.failures), elapsedS, clientCpu: (used.user + used.system) / 1e6 / elapsedS };
}

async function openConnections(target: Target, count: number): Promise<Connection[]> {
  return Promise.all(Array.from({ length: count }, () => Connection.open(target)));
}

/** Sends one request and returns its status and body: a check that the server answers as expected. */
export async function probe(target: Target, request: Buffer): Promise<{ status: number; body: Buffer }> {
  const [connection] = await openConnections(target, 1);
  try {
    return await new Promise((resolve, reject) =>
      connection!.send(request, (status, body) => resolve({ status, body: body ?? Buffer.alloc(0) }), reject, true),
    );
  } finally {
    connection!.close();
  }
}

/** `connections` connections each send `request` back to back for `seconds`. */
export async function closedLoop(target: Target, request: Buffer, connections: number, seconds: number): Promise<LoadResult> {
  const pool = await openConnections(target, connections);
  const latencies = new Float64Array(Math.ceil(seconds * 50_000) + connections);
  let count = 0;
  let notOk = 0;
  const failures: Record<string, number> = {};
  const cpu = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    pool.map(
      (connection) =>
        new Promise<void>((resolve) => {
          const next = () => {
            const sent = performance.now();
            if (sent >= deadline || count >= latencies.length) return resolve();
            connection.send(
              request,
              (status) => {
                latencies[count++] = performance.now() - sent;
                if (status !== 200) notOk += 1;
                next();
              },
              (error) => {
                countFailure(failures, error);
                resolve();
              },
            );
          };
          next();
        }),
    ),
  );
  return finishLoad(pool, started, cpu, { latencies, count, notOk, failures, unsent: 0, unsentLatencyMs: 0, sendLagP99Ms: 0 });
}

/**
 * Requests due every 1/rate s for `seconds`, each sent on an idle connection
 * of a pool of `connections`, or queued until one is idle; a connection idle
 * for `idleTimeoutMs` is closed and another opened in its place. At the end,
 * what is on the wire is awaited (at most `drainS` s); what is still queued is
 * counted as unsent.
 */
export async function openLoop(
  target: Target,
  request: Buffer,
  rate: number,
  seconds: number,
  connections: number,
  { drainS = 5, idleTimeoutMs = CLIENT_IDLE_TIMEOUT_MS } = {},
): Promise<LoadResult> {
  const pool = await openConnections(target, connections);
  const total = Math.round(rate * seconds);
  const latencies = new Float64Array(total);
  const lags = new Float64Array(total);
  let lagged = 0;
  const idle = [...pool];
  const queue: number[] = [];
  let queueHead = 0;
  let count = 0;
  let notOk = 0;
  const failures: Record<string, number> = {};
  let inFlight = 0;
  let due = 0;
  let stopped = false;
  const interval = 1000 / rate;
  const cpu = process.cpuUsage();
  const started = performance.now();

  // Idle connections are closed by a timer, as Go's transport closes them,
  // not only when one is taken for a request: the pool's last ones, seldom
  // taken, would otherwise stay open until the server closed them.
  const sweep = setInterval(
    () => {
      for (const connection of idle) if (!connection.closed && connection.idleMs >= idleTimeoutMs) connection.close();
    },
    Math.min(1000, idleTimeoutMs / 4),
  );
  let drained: () => void = () => {};
  const send = (connection: Connection, dueAt: number) => {
    inFlight += 1;
    connection.send(
      request,
      (status) => {
        inFlight -= 1;
        latencies[count++] = performance.now() - dueAt;
        if (status !== 200) notOk += 1;
        if (!stopped && queueHead < queue.length) send(connection, queue[queueHead++]!);
        else idle.push(connection);
        if (stopped && inFlight === 0) drained();
      },
      (error) => {
        inFlight -= 1;
        countFailure(failures, error);
        // back to the pool, closed: the next request due opens another in its place
        idle.push(connection);
        if (stopped && inFlight === 0) drained();
      },
    );
  };

  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (due < total && started + due * interval <= now) {
        const dueAt = started + due * interval;
        due += 1;
        const connection = idle.pop();
        if (connection && !connection.closed && connection.idleMs >= idleTimeoutMs) connection.close();
        if (connection?.closed) {
          lags[lagged++] = now - dueAt;
          inFlight += 1;
          void Connection.open(target).then(
            (fresh) => {
              inFlight -= 1;
              pool.push(fresh);
              send(fresh, dueAt);
            },
            (error: Error) => {
              inFlight -= 1;
              idle.push(connection);
              countFailure(failures, new Error(`opening a connection in place of a closed one: ${error.message}`));
              if (stopped && inFlight === 0) drained();
            },
          );
        } else if (connection) {
          lags[lagged++] = now - dueAt;
          send(connection, dueAt);
        } else queue.push(dueAt);
      }
      if (due < total) setTimeout(tick, Math.max(0, started + due * interval - performance.now()));
      else resolve();
    };
    tick();
  });
  // Everything is due: let the queue run until the phase's time is up.
  const end = started + seconds * 1000;
  while (queueHead < queue.length && performance.now() < end) await new Promise((resolve) => setTimeout(resolve, 5));
  stopped = true;
  clearInterval(sweep);
  const stoppedAt = performance.now();
  const unsent = queue.length - queueHead;
  const unsentLatencyMs = unsent > 0 ? stoppedAt - queue[queueHead]! : 0;
  if (inFlight > 0) {
    await new Promise<void>((resolve) => {
      drained = resolve;
      setTimeout(resolve, drainS * 1000).unref();
    });
  }
  const sortedLags = lags.subarray(0, lagged).sort();
  const sendLagP99Ms = sortedLags[Math.min(lagged - 1, Math.floor(0.99 * lagged))] ?? 0;
  return finishLoad(pool, started, cpu, { latencies, count, notOk, failures, unsent, unsentLatencyMs, sendLagP99Ms });
}
