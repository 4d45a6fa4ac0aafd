/**
 * forceFullCollection, which bench:hook-aging uses to tell a hook's garbage
 * from what it holds, on a real Node process that has left garbage behind.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { freePort } from '../peers/webhook/process.ts';
import { forceFullCollection } from '../support/full-collection.ts';

// keeps 4 MB, and 40 MB long enough to reach the old generation, which it then drops (garbage only a full collection frees);
// prints its heap in use on every line it reads
const child = `
const kept = Array.from({ length: 4 }, () => new Array(131072).fill(1.5));
let dropped = Array.from({ length: 40 }, (_, i) => new Array(131072).fill(i + 0.5));
dropped = undefined;
process.stdin.on('data', () => console.log(process.memoryUsage().heapUsed));
console.log('ready');
setInterval(() => kept.length, 60000);
`;

describe('forceFullCollection', () => {
  it("frees a process's garbage, keeps what it holds, and closes the inspector it opened", async () => {
    const port = await freePort();
    const process_ = spawn(process.execPath, [`--inspect-port=127.0.0.1:${port}`, '-e', child], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: process_.stdout })[Symbol.asyncIterator]();
    const next = async () => String((await lines.next()).value);
    try {
      assert.equal(await next(), 'ready');
      process_.stdin.write('\n');
      const before = Number(await next());
      await forceFullCollection(process_.pid as number, port);
      process_.stdin.write('\n');
      const after = Number(await next());
      assert.ok(before - after > 20e6, `heap in use ${before} -> ${after} bytes: the dropped 40 MB were not collected`);
      assert.ok(after > 4e6, `heap in use ${after} bytes after: the 4 MB held are gone too`);
      await assert.rejects(fetch(`http://127.0.0.1:${port}/json/list`), 'the inspector is closed again');
    } finally {
      process_.kill();
      await once(process_, 'exit');
    }
  });

  it('says so when the process has no inspector port', async () => {
    const port = await freePort();
    const plain = spawn(process.execPath, ['-e', "process.on('SIGUSR1', () => {}); setInterval(() => {}, 60000)"]);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await assert.rejects(forceFullCollection(plain.pid as number, port, 1_000), /opened no inspector on 127\.0\.0\.1:\d+ within 1000 ms/);
    } finally {
      plain.kill();
      await once(plain, 'exit');
    }
  });
});
