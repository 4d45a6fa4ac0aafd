/**
 * The hook image is part of every injected pod's start: the webhook refuses
 * to start with a value that could only leave operator pods at Init.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkHookImage, HOOK_IMAGE_PLACEHOLDER } from '../../../src/commands/injection-settings.ts';
import { UsageError } from '../../../src/flags.ts';
import { version } from '../../../src/version.ts';

describe('checkHookImage', () => {
  it('accepts references with a tag or a digest, with or without a registry', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    for (const image of [
      'leaderhook:0.1.0',
      'leaderhook.test/leaderhook:dev',
      'registry.example.com:5000/team/leaderhook:v0.1.0-rc.1',
      `ghcr.io/example/leaderhook@${digest}`,
      `leaderhook:0.1.0@${digest}`,
    ]) {
      assert.equal(checkHookImage(image, false), image);
    }
  });

  it('refuses a missing image outside --dev, and defaults it in --dev', () => {
    assert.throws(
      () => checkHookImage(undefined, false),
      (e: Error) => e instanceof UsageError && /--hook-image is not set/.test(e.message),
    );
    assert.throws(() => checkHookImage('', false), UsageError);
    assert.equal(checkHookImage(undefined, true), `leaderhook:${version}`);
  });

  it('refuses the placeholder of deploy/deployment.yaml and says how to deploy', () => {
    assert.throws(() => checkHookImage(HOOK_IMAGE_PLACEHOLDER, false), /placeholder .*kubectl apply -k deploy/);
    assert.throws(() => checkHookImage(HOOK_IMAGE_PLACEHOLDER, true), /placeholder/);
  });

  it('refuses malformed references and references without tag or digest', () => {
    for (const image of ['Leaderhook:1', 'leaderhook:', 'leader hook:1', 'registry/:1', 'leaderhook@sha256:abc']) {
      assert.throws(() => checkHookImage(image, false), /is not an image reference/, image);
    }
    for (const image of ['other', 'registry.example.com:5000/leaderhook']) {
      assert.throws(() => checkHookImage(image, false), /has no tag or digest/, image);
    }
  });
});
