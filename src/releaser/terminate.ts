/**
 * R1, the SIGTERM path (docs/design.md#why-a-native-sidecar-acting-on-sigterm):
 * note the time of the signal, stop the background work, and give OwnRelease
 * the release budget — all with what was prepared ahead of SIGTERM (no module
 * loading, no discovery when the watch is up) — then log one line of outcome.
 */
import type { ContextWithoutClient } from './context.ts';
import type { EventRecorder } from './events.ts';
import { type OwnCandidates, OwnRelease, type OwnReleaseClient, type OwnReleaseSettings } from './own-release.ts';
import type { TerminateResult } from './releaser.ts';

export type { OwnCandidates } from './own-release.ts';

export interface TerminateSettings extends OwnReleaseSettings {
  /** Called first, at the signal: ends the background work, which must not race the release. */
  stopBackground(): void;
}

export class Terminator {
  readonly #ctx: ContextWithoutClient;
  readonly #settings: TerminateSettings;
  readonly #release: OwnRelease;
  #terminating: Promise<TerminateResult> | undefined;

  constructor(ctx: ContextWithoutClient, parts: { client: OwnReleaseClient; events: EventRecorder; candidates: OwnCandidates }, settings: TerminateSettings) {
    this.#ctx = ctx;
    this.#settings = settings;
    this.#release = new OwnRelease(ctx, parts, settings);
  }

  /** The first call runs R1; every later call gets the same result. */
  onTerminate(): Promise<TerminateResult> {
    if (this.#terminating) return this.#terminating;
    const { releaseTimeoutMs } = this.#settings;
    // The time of the signal, before anything else: R1 compares it with the deadline.
    const t = this.#ctx.clock.now();
    const started = performance.now();
    const result: TerminateResult = {
      decision: { release: false, refusal: 'timeout', message: `no decision within ${releaseTimeoutMs} ms` },
      released: [],
      observed: [],
      moved: [],
      kept: [],
      failed: [],
      durationMs: 0,
    };
    this.#terminating = this.#run(t, started, result);
    return this.#terminating;
  }

  async #run(t: number, started: number, result: TerminateResult): Promise<TerminateResult> {
    const { log, metrics } = this.#ctx;
    const { releaseTimeoutMs } = this.#settings;
    this.#settings.stopBackground();
    const budget = new AbortController();
    let timedOut = false;
    // what the budget is spent on: the locks first, then the Events telling of them
    let phase: 'release' | 'events' = 'release';
    const timer = setTimeout(() => {
      timedOut = true;
      budget.abort();
    }, releaseTimeoutMs);
    try {
      await Promise.race([
        (async () => {
          await this.#release.release(t, budget.signal, result);
          phase = 'events';
          await this.#release.recordEvents(result, budget.signal);
        })(),
        new Promise<void>((resolve) => budget.signal.addEventListener('abort', () => resolve(), { once: true })),
      ]);
    } catch (err) {
      log.error({ rule: 'R1', err }, 'R1: release failed');
      result.failed.push((err as Error).message);
    } finally {
      clearTimeout(timer);
      // cancels whatever is still in flight once the budget is spent
      budget.abort();
    }
    // what the budget cut short still settles later: it must not change the result given out
    const settled: TerminateResult = {
      ...result,
      released: [...result.released],
      observed: [...result.observed],
      moved: [...result.moved],
      kept: [...result.kept],
      failed: [...result.failed],
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      ...(timedOut ? { timedOut: phase } : {}),
    };
    this.#logOutcome(t, settled);
    await metrics.close().catch(() => {});
    return settled;
  }

  #logOutcome(t: number, result: TerminateResult): void {
    const { log, metrics } = this.#ctx;
    const { releaseTimeoutMs } = this.#settings;
    const fields = {
      rule: 'R1',
      signalAt: new Date(t).toISOString(),
      durationMs: result.durationMs,
      released: result.released,
      observed: result.observed,
      moved: result.moved,
      kept: result.kept,
      failed: result.failed,
    };
    const d = result.decision;
    // every lock was dealt with in time; only the Events telling of them were not
    const lateEvents = result.timedOut === 'events' ? `; Event not recorded within ${releaseTimeoutMs} ms` : '';
    if (result.timedOut === 'release') {
      log.warn(fields, `SIGTERM: release gave up after ${releaseTimeoutMs} ms; garbage collection remains the fallback`);
    } else if (!d.release) {
      metrics.refused('R1', d.refusal);
      log.info({ ...fields, refusal: d.refusal }, `SIGTERM: releasing nothing: ${d.message}`);
    } else if (result.failed.length > 0) {
      log.warn(fields, `SIGTERM: some own locks could not be released (${d.message})${lateEvents}`);
    } else if (result.released.length + result.observed.length === 0) {
      const kept = result.kept.length > 0 ? `; left to expire: ${result.kept.join('; ')}` : '';
      log.info(fields, `SIGTERM: operator stopped; this pod holds no lock it can prove its own (${d.message})${kept}`);
    } else {
      const what = result.observed.length > 0 ? `would release ${result.observed.join(', ')} (observe mode)` : `released ${result.released.join(', ')}`;
      log[lateEvents ? 'warn' : 'info'](fields, `SIGTERM: ${what} (${d.message})${lateEvents}`);
    }
  }
}
