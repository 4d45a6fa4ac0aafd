/**
 * The Go peer does what leaderhook does: every golden case of
 * test/testdata/inject goes through both webhooks over HTTPS on 127.0.0.1
 * (leaderhook's server in this process, the peer as a process of its own),
 * each patch is applied to the submitted pod with fast-json-patch, and the
 * two resulting pods and the two warning lists must be equal.
 *
 *   node_modules/.bin/node --test test/peers/webhook/equality.test.ts
 *
 * Needs `go` (the build uses the Go module proxy on a cold cache and takes
 * minutes on 2 cores). `npm test` runs it after the unit tests.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { pino } from 'pino';
import { parse } from 'yaml';
import type { InjectionSettings } from '../../../src/injector/types.ts';
import { ensureDevCertificates } from '../../../src/webhook/devcerts.ts';
import { type RunningWebhook, startWebhookServer } from '../../../src/webhook/server.ts';
import { kubebuilderReview, largePodReview, podOf } from '../../bench/webhook-pods.ts';
import { goldenSettings, settingsFor } from '../../support/injection-settings.ts';
import { buildPeer, type ServerProcess, startPeer } from './process.ts';

const goldenDir = path.join(import.meta.dirname, '../../testdata/inject');
const cases = readdirSync(goldenDir)
  .filter((f) => f.endsWith('.yaml') && !f.endsWith('.settings.yaml'))
  .map((f) => f.slice(0, -'.yaml'.length))
  .sort();

interface Answer {
  patch: Operation[];
  warnings: string[];
}

function post(url: string, ca: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/mutate`,
      { method: 'POST', ca, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode}: ${text}`));
          const response = (JSON.parse(text) as { response: { allowed: boolean; patch?: string; warnings?: string[] | null } }).response;
          if (response.allowed !== true) return reject(new Error(`${url}: not allowed: ${text}`));
          const patch = response.patch ? (JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as Operation[]) : [];
          resolve({ patch, warnings: response.warnings ?? [] });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function review(name: string, pod: { metadata?: { namespace?: string; name?: string } }): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `equality-${name}`,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: pod.metadata?.namespace ?? 'default',
      name: pod.metadata?.name ?? '',
      operation: 'CREATE',
      userInfo: { username: 'equality-test' },
      object: pod,
    },
  });
}

describe('the Go peer mutates every golden pod as leaderhook does', { timeout: 20 * 60_000 }, () => {
  let dir: string;
  let ca: string;
  let binary: string;
  const servers = new Map<string, { leaderhook: RunningWebhook; peer: ServerProcess }>();
  const logger = pino({ level: 'silent' });

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'leaderhook-peer-'));
    await ensureDevCertificates(dir, logger, ['127.0.0.1']);
    ca = await readFile(path.join(dir, 'ca.crt'), 'utf8');
    binary = await buildPeer(dir);
  });

  after(async () => {
    for (const { leaderhook, peer } of servers.values()) {
      await leaderhook.close();
      await peer.stop();
    }
    await rm(dir, { recursive: true, force: true });
  });

  /** One pair of servers per distinct settings: the peer takes its settings as flags. */
  async function serversFor(settings: InjectionSettings) {
    const key = JSON.stringify(settings);
    let pair = servers.get(key);
    if (!pair) {
      const files = { certFile: path.join(dir, 'tls.crt'), keyFile: path.join(dir, 'tls.key') };
      const leaderhook = await startWebhookServer({
        host: '127.0.0.1',
        port: 0,
        ...files,
        dev: false,
        certsDir: dir,
        injection: settings,
        bodyLimitBytes: 3 << 20,
        logger,
        certPollIntervalMs: 0,
      });
      const peer = await startPeer(binary, { ...files, ca, settings });
      pair = { leaderhook, peer };
      servers.set(key, pair);
    }
    return pair;
  }

  async function compareAnswers(t: TestContext, settings: InjectionSettings, input: object, body: string): Promise<void> {
    const { leaderhook, peer } = await serversFor(settings);
    const [ours, theirs] = await Promise.all([post(leaderhook.url, ca, body), post(peer.url, ca, body)]);
    const oursPod = fastJsonPatch.applyPatch(structuredClone(input), ours.patch, true, false).newDocument;
    const theirsPod = fastJsonPatch.applyPatch(structuredClone(input), theirs.patch, true, false).newDocument;
    assert.deepEqual(theirs.warnings, ours.warnings, 'the same warnings, in the same order');
    const differences = fastJsonPatch.compare(oursPod, theirsPod);
    assert.deepEqual(
      differences.filter((op) => !isTypedRoundTripArtifact(op)),
      [],
      'the patched pods differ beyond the typed round trip',
    );
    if (differences.length > 0) t.diagnostic(`typed round-trip artifacts of the peer: ${differences.map((op) => `${op.op} ${op.path}`).join(', ')}`);
  }

  for (const name of cases) {
    test(name, async (t) => {
      const input = parse(readFileSync(path.join(goldenDir, `${name}.yaml`), 'utf8'));
      await compareAnswers(t, settingsFor(name), input, review(name, input));
    });
  }

  // The two bodies of the benchmark, as they are: both servers must do the same work there too.
  for (const [name, body] of [
    ['benchmark: kubebuilder pod review', kubebuilderReview()],
    ['benchmark: large pod review', largePodReview()],
  ] as const) {
    test(name, async (t) => {
      await compareAnswers(t, goldenSettings, podOf(body), body.toString('utf8'));
    });
  }
});

/**
 * The one way the pods may differ, and why they cannot be equal: the peer
 * decodes the pod into the typed corev1.Pod, mutates it and marshals it
 * again (the idiomatic controller-runtime way), and Go's encoding/json does
 * not leave out an empty struct field tagged `omitempty`. So the peer's
 * marshaled pod has `status: {}` (PodStatus) and `resources: {}`
 * (ResourceRequirements) on every container that had none, and
 * PatchResponseFromRaw, diffing the raw request against it, adds them to
 * the patch. The API server decodes the patched pod into the same structs, so
 * the stored pod is the same; the patch is not (and on an already injected
 * pod the peer's patch is not empty). Everything else must be equal.
 */
function isTypedRoundTripArtifact(op: Operation): boolean {
  if (op.op !== 'add' || !isEmptyObject(op.value)) return false;
  return op.path === '/status' || /^\/spec\/(initContainers|containers)\/\d+\/resources$/.test(op.path);
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}
