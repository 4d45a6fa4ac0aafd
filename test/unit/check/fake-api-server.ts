/**
 * The in-memory cluster of fake-cluster.ts served on loopback HTTP as an API
 * server would (JSON bodies, a Status with the code on errors), with a
 * kubeconfig that points at it: `leaderhook check` as a process reads it
 * through its own API client.
 */
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { healthyCluster, fakeApi, type FakeCluster } from './fake-cluster.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import { createCertificateAuthority, issueServingCertificate, WEBHOOK_SERVICE_NAMES } from '../../../src/webhook/devcerts.ts';

export function serve(cluster: FakeCluster): Promise<Server> {
  const api = fakeApi(cluster);
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const query = Object.fromEntries(url.searchParams);
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => {
      body += c;
    });
    req.on('end', async () => {
      try {
        const answer = req.method === 'POST' ? await api.post(url.pathname, JSON.parse(body), query) : await api.get(url.pathname, query);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
      } catch (error) {
        const status = error instanceof KubeApiError ? error.status : 500;
        res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: status, message: String(error) }));
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A kubeconfig whose current context is `server` (context fake, user admin). */
export async function writeKubeconfig(file: string, server: Server): Promise<void> {
  const { port } = server.address() as AddressInfo;
  await writeFile(
    file,
    JSON.stringify({
      'current-context': 'fake',
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'admin' } }],
      clusters: [{ name: 'fake', cluster: { server: `http://127.0.0.1:${port}` } }],
      users: [{ name: 'admin', user: { token: 'admin-token' } }],
    }),
  );
}

/** A healthy install (as deploy/ makes it) with a fresh CA and serving certificate, served. */
export async function serveHealthyCluster(): Promise<{ cluster: FakeCluster; server: Server }> {
  const ca = await createCertificateAuthority('leaderhook command test CA');
  const cluster = healthyCluster(ca, await issueServingCertificate(ca, WEBHOOK_SERVICE_NAMES));
  return { cluster, server: await serve(cluster) };
}
