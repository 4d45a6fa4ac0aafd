import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedSerializer } from '../../../src/releaser/serializer.ts';

/** A pass that waits until released, and records that it ran. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe('KeyedSerializer', () => {
  it('runs one pass at a time per key, and coalesces calls made meanwhile into one more pass', async () => {
    const s = new KeyedSerializer<string>();
    const first = gate();
    let passes = 0;
    let concurrent = 0;
    let maxConcurrent = 0;
    const pass = async () => {
      passes++;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      if (passes === 1) await first.opened;
      concurrent--;
      return true;
    };
    const running = s.run('a', pass);
    await Promise.all([s.run('a', pass), s.run('a', pass), s.run('a', pass)]);
    assert.equal(passes, 1, 'calls during a pass start nothing');
    first.open();
    await running;
    assert.equal(passes, 2, 'one more pass for all the calls made meanwhile');
    assert.equal(maxConcurrent, 1);
  });

  it('runs different keys independently', async () => {
    const s = new KeyedSerializer<object>();
    const a = {};
    const b = {};
    const g = gate();
    const seen: string[] = [];
    const running = s.run(a, async () => {
      seen.push('a');
      await g.opened;
      return true;
    });
    await s.run(b, async () => {
      seen.push('b');
      return true;
    });
    assert.deepEqual(seen, ['a', 'b'], 'b ran while a was still running');
    g.open();
    await running;
  });

  it('drops the pass asked for meanwhile when the running one stops early', async () => {
    const s = new KeyedSerializer<string>();
    const g = gate();
    let passes = 0;
    const running = s.run('a', async () => {
      passes++;
      await g.opened;
      return false;
    });
    await s.run('a', async () => true);
    g.open();
    await running;
    assert.equal(passes, 1);
    await s.run('a', async () => {
      passes++;
      return true;
    });
    assert.equal(passes, 2, 'the key is free again afterwards');
  });

  it('frees the key when a pass throws', async () => {
    const s = new KeyedSerializer<string>();
    await assert.rejects(
      s.run('a', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    let ran = false;
    await s.run('a', async () => {
      ran = true;
      return true;
    });
    assert.ok(ran);
  });
});
