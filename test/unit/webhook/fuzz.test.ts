/**
 * Bad input at scale, the small count: generated bodies of every class of
 * test/support/review-arbitraries.ts against a webhook on 127.0.0.1, over a
 * keep-alive HTTPS connection. Each body must get the answer its class
 * requires, and the server must neither fail internally nor stop. The full
 * count (100,000, against the compiled server as its own process, with its
 * memory) is `npm run bench:webhook-fuzz`.
 *
 * On a failure fast-check prints the smallest failing body it found, the
 * seed and the path to it: LEADERHOOK_FUZZ_SEED=<seed> replays the run, and
 * with LEADERHOOK_FUZZ_PATH=<path> it sends that body alone.
 * LEADERHOOK_FUZZ_BODIES changes the count.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { type FuzzTarget, keepAliveAgent, sendFuzzBody } from '../../support/fuzz-client.ts';
import { checkAnswer } from '../../support/review-answers.ts';
import { anyBody, BODY_CLASSES, type BodyClass } from '../../support/review-arbitraries.ts';
import { startTestServer, type TestServer } from './support.ts';

const BODIES = Number(process.env.LEADERHOOK_FUZZ_BODIES ?? 3000);
const SEED = process.env.LEADERHOOK_FUZZ_SEED === undefined ? undefined : Number(process.env.LEADERHOOK_FUZZ_SEED);
const PATH = process.env.LEADERHOOK_FUZZ_PATH;
/** Small enough that huge and oversized bodies stay cheap, large enough for every class (the test server's default). */
const BODY_LIMIT_BYTES = 64 * 1024;

describe('webhook under generated bodies', () => {
  let server: TestServer;
  let target: FuzzTarget;
  before(async () => {
    server = await startTestServer({ bodyLimitBytes: BODY_LIMIT_BYTES });
    target = { url: server.webhook.url, ca: server.ca, agent: keepAliveAgent(1) };
  });
  after(async () => {
    target.agent.destroy();
    await server.cleanup();
  });

  it(`answers ${BODIES} bodies each as its class requires, and keeps serving`, async () => {
    const seen = new Map<BodyClass, number>();
    await fc.assert(
      fc.asyncProperty(anyBody({ bodyLimitBytes: BODY_LIMIT_BYTES }), async (sent) => {
        seen.set(sent.class, (seen.get(sent.class) ?? 0) + 1);
        const answer = await sendFuzzBody(target, sent);
        const problem = checkAnswer(sent, answer.status, answer.text);
        assert.equal(problem, undefined, `${sent.class} body of ${sent.body.length} bytes (${JSON.stringify(sent.headers)}): ${problem}`);
      }),
      { numRuns: BODIES, ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }) },
    );

    if (PATH === undefined) {
      const unseen = (Object.keys(BODY_CLASSES) as BodyClass[]).filter((cls) => !seen.has(cls));
      assert.deepEqual(unseen, [], 'every class of body was sent');
    }
    const health = await server.request('/healthz');
    assert.equal(health.status, 200);
    const failures = server.lines.filter((line) => line.level === 'error' || line.level === 'fatal');
    assert.deepEqual(
      failures.map((line) => line.msg),
      [],
      'no answer failed inside the webhook',
    );
  });
});
