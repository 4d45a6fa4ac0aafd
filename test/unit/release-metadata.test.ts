import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { publicUrl, releaseMetadata } from '../../scripts/release/metadata.ts';
import { gitRevision } from '../../src/build-info.ts';
import { version } from '../../src/version.ts';

describe('release metadata', () => {
  it("is package.json's version, this checkout's commit and the commit's time, or SOURCE_DATE_EPOCH's", () => {
    const metadata = releaseMetadata({});
    assert.equal(metadata.version, version);
    assert.equal(metadata.revision, gitRevision(import.meta.dirname));
    assert.match(metadata.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(releaseMetadata({ SOURCE_DATE_EPOCH: '1767225600' }).created, '2026-01-01T00:00:00Z');
    assert.throws(() => releaseMetadata({ SOURCE_DATE_EPOCH: 'yesterday' }), /SOURCE_DATE_EPOCH "yesterday" is not a number/);
  });

  it('names the source repository without credentials, as https', () => {
    assert.equal(publicUrl('git+https://github.com/o/r.git'), 'https://github.com/o/r.git');
    assert.equal(publicUrl('https://user:token@gitlab.example.com/o/r'), 'https://gitlab.example.com/o/r');
    assert.equal(publicUrl('git@github.com:o/r.git'), 'https://github.com/o/r.git');
    assert.equal(publicUrl('not a url'), '');
  });
});
