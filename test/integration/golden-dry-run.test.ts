/**
 * Every golden case's injected pod must be accepted by a real API server
 * (server-side dry-run: validation, defaulting and admission, Pod Security
 * included). Each case that is not privileged by itself is tried in a
 * namespace enforcing Pod Security "restricted".
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { injectPod } from '../../src/injector/index.ts';
import { settingsFor } from '../support/injection-settings.ts';
import { apiStatus, connectTestCluster, core, createTestNamespace, type TestNamespace } from '../support/kube.ts';

connectTestCluster();

const dir = path.join(import.meta.dirname, '../testdata/inject');
/**
 * Cases on the host's network need a privileged namespace by design:
 * hostNetwork, and the hostPort it implies, are forbidden under baseline and
 * restricted.
 */
const needsPrivileged = (pod: V1Pod): boolean => pod.spec?.hostNetwork === true;
const goldens = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml.injected'))
  .map((f) => {
    const name = f.slice(0, -'.yaml.injected'.length);
    const golden = parse(readFileSync(path.join(dir, f), 'utf8')) as { pod: V1Pod; warnings: string[] };
    return { name, pod: golden.pod, warnings: golden.warnings, input: parse(readFileSync(path.join(dir, `${name}.yaml`), 'utf8')) as V1Pod };
  });
/** The warning of a pod the hook's annotations turn from Guaranteed to Burstable. */
const MADE_BURSTABLE = /this Guaranteed pod becomes Burstable/;
const QOS_RANK = ['BestEffort', 'Burstable', 'Guaranteed'];

/** The QoS class the API server gives `pod` (a server-side dry-run create). */
async function qosClassOf(pod: V1Pod, namespace: string): Promise<string | undefined> {
  const body = structuredClone(pod);
  body.metadata = { ...body.metadata, namespace };
  return (await core.createNamespacedPod({ namespace, body, dryRun: 'All' })).status?.qosClass;
}

function errorBody(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  return typeof body === 'string' ? body : JSON.stringify(body ?? (error as Error).message);
}

describe('injected golden pods pass server-side dry-run', () => {
  let restricted: TestNamespace;
  let privilegedNs: TestNamespace;
  before(async () => {
    restricted = await createTestNamespace('golden-restricted', {
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'latest',
    });
    privilegedNs = await createTestNamespace('golden-privileged', { 'pod-security.kubernetes.io/enforce': 'privileged' });
  });
  after(async () => {
    await restricted?.cleanup();
    await privilegedNs?.cleanup();
  });

  test('there are golden pods, some on the host network', () => {
    assert.ok(goldens.length >= 15);
    assert.ok(goldens.some(({ pod }) => needsPrivileged(pod)));
  });

  for (const { name, pod, warnings, input } of goldens) {
    test(name, async () => {
      const namespace = needsPrivileged(pod) ? privilegedNs.name : restricted.name;
      const body: V1Pod = structuredClone(pod);
      body.metadata = { ...body.metadata, namespace };
      let qosClasses: (string | undefined)[] = [];
      try {
        const created = await core.createNamespacedPod({ namespace, body, dryRun: 'All' });
        assert.equal(created.metadata?.namespace, namespace);
        const hook = created.spec?.initContainers?.find((c) => c.name === 'leaderhook-release');
        if (pod.spec?.initContainers?.some((c) => c.name === 'leaderhook-release')) {
          assert.equal(hook?.restartPolicy, 'Always', 'the hook is a native sidecar');
          assert.equal(created.spec?.initContainers?.at(-1)?.name, 'leaderhook-release', 'the hook is the last init container');
          // What a reinvocation sees: the pod after the API server's defaulting
          // and built-in admission. Injecting it again must change nothing.
          const again = injectPod(JSON.parse(JSON.stringify(created)), settingsFor(name));
          assert.deepEqual(again.patch, [], `reinvocation after defaulting would patch: ${JSON.stringify(again.patch)}`);
        }
        qosClasses = [await qosClassOf(input, namespace), created.status?.qosClass];
      } catch (error) {
        assert.fail(`API server refused ${name} in ${namespace} (status ${apiStatus(error)}): ${errorBody(error)}`);
      }
      // The API server's QoS class as submitted and as injected: never lower, Guaranteed kept,
      // unless the pod's own hook annotations ask otherwise, and then the injector says so.
      const [submitted, injected] = qosClasses;
      if (warnings.some((warning) => MADE_BURSTABLE.test(warning))) {
        assert.deepEqual(qosClasses, ['Guaranteed', 'Burstable'], 'a warning of a pod made Burstable');
      } else if (submitted === 'Guaranteed') {
        assert.equal(injected, 'Guaranteed', 'a Guaranteed pod stays Guaranteed');
      } else {
        assert.ok(QOS_RANK.indexOf(injected ?? '') >= QOS_RANK.indexOf(submitted ?? ''), `QoS class ${submitted} as submitted, ${injected} as injected`);
      }
    });
  }

  test('the restricted namespace does refuse a pod that breaks the profile (the check is live)', async () => {
    const body: V1Pod = { metadata: { name: 'root' }, spec: { containers: [{ name: 'c', image: 'example.test/x:1' }] } };
    await assert.rejects(core.createNamespacedPod({ namespace: restricted.name, body, dryRun: 'All' }), (error) => apiStatus(error) === 403);
  });
});
