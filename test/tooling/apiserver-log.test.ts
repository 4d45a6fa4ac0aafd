import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { LogTail, webhookCallErrors } from '../../test/support/apiserver-log.ts';

// Lines as the kube-apiserver's admission dispatcher logs them (klog), one of each kind.
const refused =
  'W1201 15:02:23.081248   19918 dispatcher.go:210] Failed calling webhook, failing open inject.leaderhook.io: failed calling webhook "inject.leaderhook.io": failed to call webhook: Post "https://leaderhook-webhook.leaderhook-system.svc:443/mutate?timeout=5s": dial tcp 10.96.19.6:443: connect: connection refused';
const unknownAuthority =
  'E1201 15:02:24.000001   19918 dispatcher.go:214] "Unhandled Error" err="failed calling webhook \\"inject.leaderhook.io\\": failed to call webhook: Post \\"https://leaderhook-webhook.leaderhook-system.svc:443/mutate?timeout=5s\\": tls: failed to verify certificate: x509: certificate signed by unknown authority" logger="UnhandledError"';
const otherWebhook =
  'W1201 15:02:25.000001   19918 dispatcher.go:210] Failed calling webhook, failing open other.example.com: failed calling webhook "other.example.com": tls: failed to verify certificate: x509: certificate has expired';
const unrelated = 'I1201 15:02:26.000001   19918 alloc.go:328] "allocated clusterIPs" service="leaderhook-system/leaderhook-webhook"';

test("the API server's failed calls to leaderhook's webhooks, the TLS ones apart; other webhooks and other lines are not counted", () => {
  assert.deepEqual(webhookCallErrors([refused, unknownAuthority, otherWebhook, unrelated]), { tls: [unknownAuthority], other: [refused] });
  assert.deepEqual(webhookCallErrors([unrelated]), { tls: [], other: [] });
});

test('a log tail gives the lines written after it was made, none before', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leaderhook-log-tail-'));
  try {
    const file = join(dir, 'kube-apiserver.log');
    writeFileSync(file, `${refused}\n`);
    const tail = new LogTail(file);
    assert.deepEqual(tail.lines(), []);
    appendFileSync(file, `${unknownAuthority}\n${unrelated}\n`);
    assert.deepEqual(tail.lines(), [unknownAuthority, unrelated]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
