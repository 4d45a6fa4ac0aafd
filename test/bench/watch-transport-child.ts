/**
 * The process bench:watch-transport measures: K metadata-only watches on pods
 * by name (as the release hook watches each Lease holder), opened over
 * HTTP/1.1 (a keep-alive agent, a connection per watch, as the hook's
 * src/kube/transport.ts does) or over HTTP/2 (a stream per watch on one
 * session, another session each time one is full, as client-go does). It
 * loads only the module its transport needs, since what node:http2 costs a
 * process is part of the answer.
 *
 *   node --expose-gc test/bench/watch-transport-child.ts h1|h2 K NAMESPACE
 *
 * Prints `{"ready":K}` once every watch has its 200, then collects garbage
 * and prints `{"settled":true}`; any other answer or a failure prints
 * `{"error":...}` and exits 1. The parent stops it with SIGTERM.
 */
import type { IncomingMessage } from 'node:http';
import { metadataAccept } from '../../src/kube/client.ts';
import { type ClusterConfig, kubeconfigConfig } from '../../src/kube/config.ts';
import { connectTestCluster, kubeconfigPath } from '../support/kube.ts';

const [transport, countText, namespace] = process.argv.slice(2);
const count = Number(countText);
if ((transport !== 'h1' && transport !== 'h2') || !Number.isInteger(count) || count < 0 || !namespace) {
  console.error('usage: watch-transport-child.ts h1|h2 K NAMESPACE');
  process.exit(2);
}

const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const fail = (error: unknown): never => {
  say({ error: error instanceof Error ? error.message : String(error) });
  process.exit(1);
};

/** The watch of pod `name`: what the hook asks for a Lease holder, bookmarks included. */
const watchPath = (name: string) =>
  `/api/v1/namespaces/${namespace}/pods?watch=true&allowWatchBookmarks=true&fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;

/** Every event is read and dropped, as the hook drops what is not its own. */
let bytesReceived = 0;

async function overHttp1(config: ClusterConfig): Promise<void> {
  const https = await import('node:https');
  const agent = new https.Agent({ keepAlive: true, ca: config.ca, cert: config.cert, key: config.key });
  const token = config.token?.get();
  await Promise.all(
    Array.from(
      { length: count },
      (_, i) =>
        new Promise<void>((resolve, reject) => {
          const request = https.request(
            new URL(watchPath(`holder-${i}`), config.server),
            { agent, headers: { Accept: metadataAccept.watch, ...(token ? { Authorization: `Bearer ${token}` } : {}) } },
            (response: IncomingMessage) => {
              if (response.statusCode !== 200) reject(new Error(`watch ${i}: HTTP ${response.statusCode}`));
              response.on('data', (chunk: Buffer) => {
                bytesReceived += chunk.length;
              });
              resolve();
            },
          );
          request.on('error', reject);
          request.end();
        }),
    ),
  );
}

/**
 * The API server caps the streams of one HTTP/2 connection (its SETTINGS say
 * how many: 100 on the local cluster) and Node queues a request beyond that
 * for ever, so a watch that finds its session full opens the next one, as
 * Go's HTTP/2 transport opens another connection.
 */
async function overHttp2(config: ClusterConfig): Promise<void> {
  const http2 = await import('node:http2');
  type Session = ReturnType<typeof http2.connect>;
  const open = (): Promise<{ session: Session; capacity: number }> =>
    new Promise((resolve, reject) => {
      const session = http2.connect(config.server.origin, { ca: config.ca, cert: config.cert, key: config.key });
      session.once('error', reject);
      session.once('remoteSettings', (settings) => {
        session.off('error', reject);
        session.on('error', fail);
        resolve({ session, capacity: settings.maxConcurrentStreams ?? Number.POSITIVE_INFINITY });
      });
    });
  let current = await open();
  let streams = 0;
  const token = config.token?.get();
  const opened: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    if (streams === current.capacity) {
      current = await open();
      streams = 0;
    }
    streams++;
    const { session } = current;
    opened.push(
      new Promise<void>((resolve, reject) => {
        const stream = session.request({
          ':path': watchPath(`holder-${i}`),
          accept: metadataAccept.watch,
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        });
        stream.on('response', (headers) => {
          if (headers[':status'] !== 200) reject(new Error(`watch ${i}: HTTP ${headers[':status']}`));
          resolve();
        });
        stream.on('data', (chunk: Buffer) => {
          bytesReceived += chunk.length;
        });
        stream.on('error', reject);
      }),
    );
  }
  await Promise.all(opened);
}

try {
  // the test cluster's kubeconfig, refused outside its network namespace as every helper that talks to it is
  connectTestCluster();
  const config = await kubeconfigConfig(kubeconfigPath);
  await (transport === 'h1' ? overHttp1(config) : overHttp2(config));
} catch (error) {
  fail(error);
}
say({ ready: count });
await new Promise((resolve) => setTimeout(resolve, 2000));
globalThis.gc?.();
say({ settled: true, bytesReceived });
process.on('SIGTERM', () => process.exit(0));
setInterval(() => {}, 60_000);
