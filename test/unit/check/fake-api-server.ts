/**
 * The in-memory cluster of fake-cluster.ts served by the fake API server of
 * test/support/fake-api-server.ts (JSON bodies, a Status with the code on
 * errors), with a kubeconfig that points at it: `leaderhook check` as a
 * process reads it through its own API client.
 */
import { writeFile } from 'node:fs/promises';
import { healthyCluster, fakeApi, type FakeCluster } from './fake-cluster.ts';
import { KubeApiError } from '../../../src/kube/errors.ts';
import { createCertificateAuthority, issueServingCertificate, WEBHOOK_SERVICE_NAMES } from '../../../src/webhook/devcerts.ts';
import { type FakeApiServer, json, startFakeApiServer } from '../../support/fake-api-server.ts';

export function serve(cluster: FakeCluster): Promise<FakeApiServer> {
  const api = fakeApi(cluster);
  return startFakeApiServer({
    answer: async (request, response) => {
      const query = Object.fromEntries(request.query);
      try {
        const answer = request.method === 'POST' ? await api.post(request.path, JSON.parse(request.body), query) : await api.get(request.path, query);
        return json(response, 200, answer);
      } catch (error) {
        const status = error instanceof KubeApiError ? error.status : 500;
        return json(response, status, { kind: 'Status', code: status, message: String(error) });
      }
    },
  });
}

/** A kubeconfig whose current context is `server` (context fake, user admin). */
export async function writeKubeconfig(file: string, server: FakeApiServer): Promise<void> {
  await writeFile(
    file,
    JSON.stringify({
      'current-context': 'fake',
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'admin' } }],
      clusters: [{ name: 'fake', cluster: { server: server.url } }],
      users: [{ name: 'admin', user: { token: 'admin-token' } }],
    }),
  );
}

/** A healthy install (as deploy/ makes it) with a fresh CA and serving certificate, served. */
export async function serveHealthyCluster(): Promise<{ cluster: FakeCluster; server: FakeApiServer }> {
  const ca = await createCertificateAuthority('leaderhook command test CA');
  const cluster = healthyCluster(ca, await issueServingCertificate(ca, WEBHOOK_SERVICE_NAMES));
  return { cluster, server: await serve(cluster) };
}
