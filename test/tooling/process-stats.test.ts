/**
 * The /proc readers the benchmarks measure hooks and webhooks with, on
 * processes of this machine: this test's own, and one that has exited.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { cpuSecondsOf, memoryOf, socketsOf } from '../support/process-stats.ts';

describe('memoryOf', () => {
  it('reads a live process: its private memory is part of its resident memory, and grows with what it allocates', () => {
    const before = memoryOf(process.pid);
    assert.ok(before.anonKiB > 1024 && before.anonKiB <= before.rssKiB, JSON.stringify(before));
    const held = Buffer.alloc(64 * 2 ** 20, 1);
    const after = memoryOf(process.pid);
    assert.ok(after.anonKiB - before.anonKiB >= 60 * 1024, `${before.anonKiB} -> ${after.anonKiB} KiB after 64 MiB written`);
    assert.equal(held[held.length - 1], 1);
  });

  it('throws for a process that is gone, rather than give a number', async () => {
    const child = spawn(process.execPath, ['-e', '']);
    await once(child, 'exit');
    assert.throws(() => memoryOf(child.pid as number), /ENOENT/);
    assert.throws(() => cpuSecondsOf(child.pid as number), /ENOENT/);
  });
});

describe('socketsOf', () => {
  it('counts the sockets a process holds, a connection as two ends of it', async (t) => {
    const before = socketsOf(process.pid);
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => server.close());
    assert.equal(socketsOf(process.pid), before + 1, 'a listening server is one socket');
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await Promise.all([once(client, 'connect'), once(server, 'connection')]);
    t.after(() => client.destroy());
    assert.equal(socketsOf(process.pid), before + 3, 'a connection adds its client end and the accepted end');
  });
});

describe('cpuSecondsOf', () => {
  it('counts the CPU a process spends, as the process itself counts it', () => {
    const before = cpuSecondsOf(process.pid);
    const usage = process.cpuUsage();
    const spentByItsOwnCount = () => {
      const { user, system } = process.cpuUsage(usage);
      return (user + system) / 1e6;
    };
    // spins until 0.3 s of CPU are spent, however busy the machine is
    const giveUpAt = performance.now() + 30_000;
    while (spentByItsOwnCount() < 0.3 && performance.now() < giveUpAt);
    const spent = cpuSecondsOf(process.pid) - before;
    const counted = spentByItsOwnCount();
    assert.ok(counted >= 0.3, `only ${counted} s of CPU in 30 s`);
    // /proc counts in clock ticks (10 ms), and other threads (the GC's) count there too
    assert.ok(spent >= counted - 0.05 && spent < counted + 0.5, `/proc says ${spent} s, the process ${counted} s`);
  });
});
