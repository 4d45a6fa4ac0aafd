/**
 * `leaderhook release` settings: the defaults come from one place, settings
 * the hook could never work with are refused, and the pod identity is
 * checked once, by runReleaser.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { releaseFlags } from '../../../src/commands/flags.ts';
import { releaseOptionsFromFlags } from '../../../src/commands/release.ts';
import { parseFlags, UsageError } from '../../../src/flags.ts';
import type { KubeClient } from '../../../src/kube/client.ts';
import { releaseDefaults } from '../../../src/releaser/defaults.ts';
import { runReleaser } from '../../../src/releaser/releaser.ts';

const identity = ['--pod-name=op-0', '--pod-namespace=ns', '--pod-uid=uid-1'];
const options = (...argv: string[]) => releaseOptionsFromFlags(parseFlags(releaseFlags, [...identity, ...argv], {}).values);

describe('release flags', () => {
  it('default to the releaser defaults', () => {
    const o = options();
    assert.equal(o.marginSeconds, releaseDefaults.marginSeconds);
    assert.equal(o.releaseTimeoutMs, releaseDefaults.releaseTimeoutMs);
    assert.equal(o.waitReportIntervalSeconds, releaseDefaults.waitReportIntervalSeconds);
    assert.deepEqual(
      releaseFlags.filter((f) => ['margin', 'release-timeout', 'wait-report-interval'].includes(f.name)).map((f) => f.default),
      ['2s', '1500ms', '60s'],
      'what --help and docs/reference.md show',
    );
  });

  it('refuse a zero --release-timeout', () => {
    assert.throws(
      () => options('--release-timeout=0'),
      (e: Error) => e instanceof UsageError && /^--release-timeout is 0/.test(e.message),
    );
    assert.equal(options('--release-timeout=1ms').releaseTimeoutMs, 1);
  });

  it("refuse a --margin that is not below the webhook's default grace-period floor (10 s)", () => {
    for (const margin of ['10s', '15s', '1m']) {
      assert.throws(
        () => options(`--margin=${margin}`),
        (e: Error) => e instanceof UsageError && /^--margin \(\d+s\) is not below the webhook's default --grace-period-floor \(10s\)/.test(e.message),
        margin,
      );
    }
    assert.equal(options('--margin=9.5s').marginSeconds, 9.5);
    assert.equal(options('--margin=0s').marginSeconds, 0);
  });

  it('refuse a zero --wait-report-interval', () => {
    assert.throws(() => options('--wait-report-interval=0s'), UsageError);
  });

  it('leave the pod identity to runReleaser, which names what is missing', async () => {
    const o = releaseOptionsFromFlags(parseFlags(releaseFlags, ['--pod-name=op-0'], {}).values);
    await assert.rejects(runReleaser({ ...o, client: {} as KubeClient, logger: pino({ level: 'silent' }) }), (e: Error) =>
      e.message.startsWith('release hook: POD_NAMESPACE (--pod-namespace), POD_UID (--pod-uid) empty: the webhook injects'),
    );
  });
});
