import assert from 'node:assert/strict';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { it } from 'node:test';
import { pino } from 'pino';
import { startMetrics } from '../../../src/releaser/metrics.ts';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function fetchText(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

it('serves releases, waits and watch health on /metrics when the port is enabled', async () => {
  const port = await freePort();
  const metrics = await startMetrics(port, pino({ level: 'silent' }));
  try {
    metrics.release('R2', 'ConfigMap', 'released');
    metrics.waiting('op-lock', 'op-0', 'running', 12);
    metrics.waiting('op-lock', 'op-0', 'crashLooping', 20);
    metrics.watchUp('configmaps', true);
    const { status, body } = await fetchText(`http://127.0.0.1:${port}/metrics`);
    assert.equal(status, 200);
    assert.match(body, /leaderhook_hook_releases_total\{rule="R2",kind="ConfigMap",outcome="released"\} 1/);
    assert.match(body, /leaderhook_hook_lock_wait_seconds\{lock="op-lock",holder="op-0",state="crashLooping"\} 20/);
    assert.doesNotMatch(body, /state="running"/, 'a changed state replaces the old series');
    assert.match(body, /leaderhook_hook_watch_up\{watch="configmaps"\} 1/);
    assert.equal((await fetchText(`http://127.0.0.1:${port}/other`)).status, 404);
  } finally {
    await metrics.close();
  }
});

it('names the port when it cannot listen', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, () => r()));
  const port = (blocker.address() as { port: number }).port;
  try {
    await assert.rejects(startMetrics(port, pino({ level: 'silent' })), new RegExp(`serving metrics on port ${port}: listen EADDRINUSE`));
  } finally {
    blocker.close();
  }
});
