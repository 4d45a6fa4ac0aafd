/**
 * The hook's logger writes pino's line shape without pino: the same keys, one
 * JSON line per call, levels filtered, child bindings kept, errors serialized.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createLineLogger } from '../../src/line-log.ts';
import { LOG_LEVELS, type LogLevel } from '../../src/log-level.ts';
import { UserFacingError } from '../../src/user-facing-error.ts';

function capture(level?: string) {
  const lines: string[] = [];
  const logger = createLineLogger('release-hook', level, (line) => lines.push(line));
  return { logger, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('createLineLogger', () => {
  it("writes one line per call in pino's shape, fields and child bindings included", () => {
    const { logger, lines, parsed } = capture();
    logger.child({ pod: 'op-0' }).info({ lock: 'ConfigMap/x' }, 'released lock x');
    assert.equal(lines.length, 1);
    assert.ok(lines[0]?.endsWith('}\n'));
    const [line] = parsed();
    assert.deepEqual(Object.keys(line ?? {}), ['level', 'time', 'component', 'pod', 'lock', 'msg']);
    assert.equal(line?.level, 'info');
    assert.equal(line?.component, 'release-hook');
    assert.ok(!Number.isNaN(Date.parse(line?.time as string)));
  });

  it("drops lines below its level; silent drops them all; an unknown level is refused in the webhook's words", () => {
    const quiet = capture('warn');
    quiet.logger.info({}, 'no');
    quiet.logger.warn({}, 'yes');
    assert.deepEqual(
      quiet.parsed().map((l) => l.msg),
      ['yes'],
    );
    const silent = capture('silent');
    silent.logger.error({}, 'no');
    assert.deepEqual(silent.lines, []);
    assert.throws(
      () => capture('chatty'),
      (e: Error) =>
        e instanceof UserFacingError && e.message === 'log level "chatty" (LEADERHOOK_LOG_LEVEL) is not one of trace, debug, info, warn, error, fatal, silent',
    );
  });

  it("knows pino's levels by pino's numbers, so both loggers take the same LEADERHOOK_LOG_LEVEL", () => {
    assert.deepEqual(Object.keys(LOG_LEVELS), [...Object.keys(pino.levels.values), 'silent']);
    for (const [level, value] of Object.entries(pino.levels.values)) assert.equal(LOG_LEVELS[level as LogLevel], value, level);
  });

  it('says which levels it writes, as pino does, in children too', () => {
    const { logger } = capture('info');
    assert.deepEqual(
      (['debug', 'info', 'warn', 'error'] as const).map((level) => logger.child({ pod: 'op-0' }).isLevelEnabled(level)),
      [false, true, true, true],
    );
    assert.equal(capture('debug').logger.isLevelEnabled('debug'), true);
  });

  it('serializes errors in any field with type, message, code and cause; the stack only on error lines', () => {
    const { logger, parsed } = capture();
    const cause = Object.assign(new Error('ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
    const err = new Error('GET /api/v1/namespaces/x/pods/y: connection refused', { cause });
    logger.warn({ err }, 'retrying');
    logger.error({ err }, 'gave up');
    const [warn, error] = parsed() as { err: Record<string, unknown> }[];
    assert.deepEqual(warn?.err, { type: 'Error', message: err.message, cause: { type: 'Error', message: cause.message, code: 'ECONNREFUSED' } });
    assert.match(String(error?.err.stack), /^Error: GET/);
  });
});
