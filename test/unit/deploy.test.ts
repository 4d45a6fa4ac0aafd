/**
 * deploy/'s webhook registration against the code it calls and the
 * guarantees every registration keeps (test/support/registration.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { assertPodEntries, assertWorkloadEntry } from '../support/registration.ts';

const config = parse(readFileSync(new URL('../../deploy/mutatingwebhookconfiguration.yaml', import.meta.url), 'utf8')) as V1MutatingWebhookConfiguration;

describe('deploy/mutatingwebhookconfiguration.yaml', () => {
  it('asks about exactly the workload kinds the webhook answers, on CREATE and UPDATE, failing open', () => {
    assertWorkloadEntry(config);
  });

  it('injects pods of enabled and required namespaces, fails closed only in required ones, and never for its own or kube-system', () => {
    assertPodEntries(config, 'leaderhook-system');
    for (const w of config.webhooks ?? []) {
      if (w.objectSelector) assert.equal(w.objectSelector.matchExpressions?.length, 1, `${w.name}: only the opt-out label`);
    }
  });
});
