/**
 * How long the webhook keeps a connection the API server may still use. The
 * API server's transport closes a webhook connection idle for 90 s
 * (client-go's IdleConnTimeout); a connection the webhook closes first can
 * take a review being written with it, and Go's transport does not send a
 * POST again, so that admission call fails.
 *
 *   npm run bench:webhook-connections [-- --wait 160]
 *
 * Starts the webhook on 127.0.0.1 (development certificates in a temporary
 * folder) and opens three connections to it:
 *   - used: one admission review answered, then idle, as the API server's
 *     connections sit between reviews;
 *   - unused: open, no request yet, as Go's transport parks a connection it
 *     dialled for a review that another connection freed up in time served.
 *   - busy: a review every 100 ms all along, as under steady admissions.
 * It prints when the webhook closed each, or that it still held it after
 * `--wait` seconds. Node closes an idle connection after keepAliveTimeout,
 * and times a connection that has sent no request from its opening by
 * headersTimeout and requestTimeout, checked every 30 s: both must come
 * after the API server's 90 s. Loopback only; no cluster.
 */
import { connect } from 'node:tls';
import { startTestServer } from '../unit/webhook/support.ts';
import { optionsOrExit, parseBenchArgs } from './bench-args.ts';
import { mutateRequest, parseResponse } from './webhook-client.ts';
import { kubebuilderReview } from './webhook-pods.ts';

const usage = `Usage: npm run bench:webhook-connections [-- --wait 160]
  --wait  seconds to wait for the webhook to close each connection (default 160)
`;
const { wait: waitS } = optionsOrExit('bench:webhook-connections', usage, () => parseBenchArgs(usage, { wait: { default: 160, min: 1 } }));

/** client-go's idle timeout for the API server's webhook connections: the one that should close first. */
const API_SERVER_IDLE_TIMEOUT_S = 90;

interface Watched {
  name: string;
  /** Seconds after it opened (or after its answer, when used) that the webhook closed it; undefined while open. */
  closedAfterS?: number;
}

const server = await startTestServer();
const port = server.webhook.address.port;

/** A TLS connection to the webhook; resolves once open, records when the webhook closes it, counted from `since()`. */
function open(watched: Watched, since: () => number): Promise<ReturnType<typeof connect>> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: server.ca, ALPNProtocols: ['http/1.1'] }, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
    // read what comes (Node writes a 408 before it closes a connection it timed out): a paused socket never sees the close
    socket.on('data', () => {});
    socket.on('end', () => {
      watched.closedAfterS ??= (performance.now() - since()) / 1000;
    });
  });
}

const used: Watched = { name: 'used once, then idle' };
const unused: Watched = { name: 'opened, no request' };
let answeredAt = 0;
let openedAt = 0;
const request = mutateRequest(kubebuilderReview());
const usedSocket = await open(used, () => answeredAt);
const usedStatus = await exchange(usedSocket, request);
if (usedStatus !== 200) throw new Error(`the review on the used connection was answered ${usedStatus}`);
answeredAt = performance.now();
const unusedSocket = await open(unused, () => openedAt);
openedAt = performance.now();

/** The status of the next whole answer on `socket` (read as the load client reads one), after `request` is written. */
function exchange(socket: ReturnType<typeof connect>, request: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = parseResponse(received, false);
      if (answer === undefined) return;
      socket.off('data', onData);
      socket.off('end', onEnd);
      resolve(answer.status);
    };
    const onEnd = () => {
      socket.off('data', onData);
      reject(new Error('closed by the webhook with a review in flight'));
    };
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.write(request);
  });
}

// in use all along: a review every 100 ms, each on the answer to the one before
const busy: Watched = { name: 'a review every 100 ms' };
let busyOpenedAt = 0;
const busySocket = await open(busy, () => busyOpenedAt);
busyOpenedAt = performance.now();
let busyReviews = 0;

const started = performance.now();
const waiting = () => (used.closedAfterS === undefined || unused.closedAfterS === undefined) && performance.now() - started < waitS * 1000;
while (waiting()) {
  if (busy.closedAfterS === undefined) {
    const status = await exchange(busySocket, request).catch((error: Error) => error.message);
    if (status !== 200) throw new Error(`review ${busyReviews + 1} on the busy connection: ${status}`);
    busyReviews++;
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const busyForS = (performance.now() - busyOpenedAt) / 1000;
usedSocket.destroy();
unusedSocket.destroy();
busySocket.destroy();
await server.cleanup();

console.log(`connection | closed by the webhook after | before the API server's ${API_SERVER_IDLE_TIMEOUT_S} s idle timeout?`);
console.log('--- | ---: | ---');
for (const { name, closedAfterS } of [used, unused, busy]) {
  const held = name === busy.name ? `${busyForS.toFixed(0)} s (${busyReviews} reviews)` : `${waitS} s`;
  const after = closedAfterS === undefined ? `still open after ${held}` : `${closedAfterS.toFixed(1)} s`;
  const early = closedAfterS !== undefined && closedAfterS < API_SERVER_IDLE_TIMEOUT_S;
  console.log(`${name} | ${after} | ${early ? 'yes: a review written then is lost' : 'no'}`);
}
