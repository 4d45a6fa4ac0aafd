/**
 * The split-brain checker on recorded interleavings: every file of
 * test/testdata/split-brain/ is a lock's history in the format the recorder
 * saves (toRecordedHistory) plus the violations it must yield — none for a
 * clean handover, each one named (kind, revisions, writer, the other party)
 * for the rest.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  checkSplitBrain,
  fromRecordedHistory,
  heartbeatOf,
  type LockHistory,
  lockHolderOf,
  type ObservedWrite,
  type RecordedHistory,
  tallySplitBrain,
  toRecordedHistory,
  type Violation,
  type ViolationKind,
} from '../support/split-brain.ts';

const dir = join(import.meta.dirname, '..', 'testdata', 'split-brain');

/** A violation as a fixture states it: the other party is a process id, a lock holder's identity, or null for nobody. */
interface Expected {
  kind: ViolationKind;
  rv: string;
  writer?: string;
  against?: string | null;
}

interface Fixture extends RecordedHistory {
  expect: Expected[];
}

const fixtures = readdirSync(dir)
  .filter((file) => file.endsWith('.json'))
  .sort()
  .map((file) => ({ file, fixture: JSON.parse(readFileSync(join(dir, file), 'utf8')) as Fixture }));

function asExpected(violation: Violation): Expected {
  const rv = violation.firstRv === violation.lastRv ? `${violation.firstRv}` : `${violation.firstRv}-${violation.lastRv}`;
  const expected: Expected = { kind: violation.kind, rv };
  const writer = violation.writer?.processID ?? violation.writer?.pod;
  if (writer !== undefined) expected.writer = writer;
  if (violation.other) expected.against = violation.other.processID ?? violation.other.pod;
  else if (violation.kind === 'not-holder') expected.against = violation.holder?.identity ?? null;
  return expected;
}

/** Every heartbeat write of the history, in revision order. */
function beatsOf(history: LockHistory): ObservedWrite<V1ConfigMap>[] {
  return history.configMaps.filter((write) => write.object.metadata?.name === history.lock.heartbeat).sort((a, b) => (a.rv < b.rv ? -1 : 1));
}

describe('split-brain checker: recorded interleavings', () => {
  test('there are fixtures, clean ones and ones to flag, and together they expect every kind of violation', () => {
    assert.ok(fixtures.length >= 10, `fixtures in ${dir}: ${fixtures.length}`);
    assert.ok(
      fixtures.some(({ fixture }) => fixture.expect.length === 0),
      'a clean handover',
    );
    const kinds = new Set(fixtures.flatMap(({ fixture }) => fixture.expect.map((e) => e.kind)));
    const every: ViolationKind[] = ['unidentified', 'not-holder', 'interleaved', 'identity-shared', 'seq-regressed', 'unobserved'];
    assert.deepEqual([...kinds].sort(), [...every].sort());
  });

  for (const { file, fixture } of fixtures) {
    test(`${file}: ${fixture.expect.length === 0 ? 'clean' : fixture.expect.map((e) => e.kind).join(', ')}`, () => {
      const violations = checkSplitBrain(fromRecordedHistory(fixture));
      assert.deepEqual(violations.map(asExpected), fixture.expect, `${fixture.description}\n${violations.map((v) => `  ${v.explanation}`).join('\n')}`);
      // Each explanation names who and where: the writer, the other party, the revisions.
      for (const violation of violations) {
        const expected = asExpected(violation);
        for (const rv of expected.rv.split('-')) assert.match(violation.explanation, new RegExp(`\\b${rv}\\b`), violation.explanation);
        if (expected.writer) assert.ok(violation.explanation.includes(expected.writer), violation.explanation);
        if (expected.against) assert.ok(violation.explanation.includes(expected.against), violation.explanation);
        if (violation.writer?.processID) assert.ok(violation.explanation.includes(violation.writer.pod), violation.explanation);
      }
    });
  }

  test('the order the watches delivered the events in does not matter: the checker orders by resourceVersion', () => {
    for (const { file, fixture } of fixtures) {
      const reversed = { ...fixture, events: [...fixture.events].reverse() };
      assert.deepEqual(checkSplitBrain(fromRecordedHistory(reversed)), checkSplitBrain(fromRecordedHistory(fixture)), file);
    }
  });

  test('a clean handover with any one heartbeat of its first leader delayed past everything else is flagged, at that heartbeat', () => {
    const clean = fixtures.filter(({ fixture }) => fixture.expect.length === 0);
    assert.ok(clean.length >= 3);
    for (const { file, fixture } of clean) {
      const history = fromRecordedHistory(fixture);
      const beats = beatsOf(history);
      const first = heartbeatOf(beats[0]?.object)?.processID;
      const last = beats.at(-1)?.rv ?? 0n;
      const lastLock = [...history.configMaps, ...history.leases].reduce((max, write) => (write.rv > max ? write.rv : max), 0n);
      const delayedRv = (last > lastLock ? last : lastLock) + 1n;
      const ofFirst = beats.filter((write) => heartbeatOf(write.object)?.processID === first);
      assert.ok(ofFirst.length >= 2, `${file}: the first leader wrote heartbeats`);
      for (const delayed of ofFirst) {
        const configMaps = history.configMaps.map((write) => (write === delayed ? { ...write, rv: delayedRv } : write));
        const violations = checkSplitBrain({ ...history, configMaps });
        assert.ok(
          violations.some((v) => v.firstRv === delayedRv && v.writer?.processID === first),
          `${file}: heartbeat rv ${delayed.rv} moved to rv ${delayedRv} is flagged: ${violations.map((v) => v.explanation).join('; ') || 'nothing'}`,
        );
      }
    }
  });

  test('the recorded format round-trips, keeping only the lock and the heartbeat', () => {
    for (const { file, fixture } of fixtures) {
      const history = fromRecordedHistory(fixture);
      const again = toRecordedHistory(history, fixture.description);
      const kept = fixture.events.filter((event) => [fixture.lock.name, fixture.lock.heartbeat].includes(event.object.metadata?.name ?? ''));
      assert.deepEqual(again.events.length, kept.length, file);
      assert.deepEqual(checkSplitBrain(fromRecordedHistory(again)), checkSplitBrain(history), file);
      assert.deepEqual(JSON.parse(JSON.stringify(again)), again, `${file}: plain JSON, no bigints`);
    }
  });
});

describe('split-brain checker: reading locks and heartbeats', () => {
  test('a ConfigMap lock is held by its one Pod owner, by UID; anything else is held by nobody', () => {
    const owner = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-1' };
    assert.deepEqual(lockHolderOf('ConfigMap', { metadata: { ownerReferences: [owner] } }), { identity: 'uid-1', pod: 'op-0' });
    assert.equal(lockHolderOf('ConfigMap', { metadata: { ownerReferences: [owner, { ...owner, uid: 'uid-2' }] } }), undefined);
    assert.equal(lockHolderOf('ConfigMap', { metadata: { ownerReferences: [{ ...owner, kind: 'ReplicaSet' }] } }), undefined);
    assert.equal(lockHolderOf('ConfigMap', { metadata: {} }), undefined);
  });

  test('a Lease is held by its holderIdentity, whose hostname part is the pod; a leaderless Lease by nobody', () => {
    assert.deepEqual(lockHolderOf('Lease', { metadata: {}, spec: { holderIdentity: 'op-5d8f_4b9e-1c3d' } }), { identity: 'op-5d8f_4b9e-1c3d', pod: 'op-5d8f' });
    // A pod name (client-go-operator's identity) has no `_`: all of it is the pod.
    assert.deepEqual(lockHolderOf('Lease', { metadata: {}, spec: { holderIdentity: 'op-5d8f-x2v4q' } }), { identity: 'op-5d8f-x2v4q', pod: 'op-5d8f-x2v4q' });
    assert.equal(lockHolderOf('Lease', { metadata: {}, spec: { holderIdentity: '' } }), undefined);
  });

  test('a heartbeat whose lock identity is not its own pod is unidentified, not trusted', () => {
    const lock = { kind: 'ConfigMap' as const, name: 'l', heartbeat: 'l-heartbeat' };
    const owner = { apiVersion: 'v1', kind: 'Pod', name: 'op-0', uid: 'uid-1' };
    const beat = (lockIdentity: string): ObservedWrite<V1ConfigMap> => ({
      type: 'MODIFIED',
      rv: 11n,
      object: { metadata: { name: 'l-heartbeat' }, data: { holder: 'op-0', seq: '1', time: '', podUID: 'uid-2', processID: 'p', lockIdentity } },
    });
    const history = (lockIdentity: string): LockHistory => ({
      lock,
      leases: [],
      configMaps: [{ type: 'ADDED', rv: 10n, object: { metadata: { name: 'l', ownerReferences: [owner] } } }, beat(lockIdentity)],
    });
    const [violation] = checkSplitBrain(history('uid-1'));
    assert.equal(violation?.kind, 'unidentified');
    assert.match(violation?.explanation ?? '', /claims lock identity uid-1, not its own pod's UID uid-2/);
    assert.deepEqual(
      checkSplitBrain(history('uid-2')).map((v) => v.kind),
      ['not-holder'],
    );
  });

  test("a Lease held as the pod's UID (a kopf entry): the holder's heartbeats pass, another pod's and a wrong identity do not", () => {
    const lock = { kind: 'Lease' as const, name: 'l', heartbeat: 'l-heartbeat', leaseIdentity: 'uid' as const };
    const beat = (rv: bigint, pod: string, podUID: string, lockIdentity: string): ObservedWrite<V1ConfigMap> => ({
      type: 'MODIFIED',
      rv,
      object: { metadata: { name: 'l-heartbeat' }, data: { holder: pod, seq: `${rv}`, time: '', podUID, processID: `p-${pod}`, lockIdentity } },
    });
    const history = (beats: ObservedWrite<V1ConfigMap>[]): LockHistory => ({
      lock,
      leases: [{ type: 'ADDED', rv: 10n, object: { metadata: { name: 'l' }, spec: { holderIdentity: 'uid-1' } } }],
      configMaps: beats,
    });
    assert.deepEqual(checkSplitBrain(history([beat(11n, 'op-0', 'uid-1', 'uid-1'), beat(12n, 'op-0', 'uid-1', 'uid-1')])), []);
    assert.deepEqual(
      checkSplitBrain(history([beat(11n, 'op-1', 'uid-2', 'uid-2')])).map((v) => v.kind),
      ['not-holder'],
    );
    const [wrong] = checkSplitBrain(history([beat(11n, 'op-0', 'uid-1', 'op-0')]));
    assert.equal(wrong?.kind, 'unidentified');
    assert.match(wrong?.explanation ?? '', /claims lock identity op-0, not its pod's UID uid-1/);
  });

  test('an empty history has nothing to flag (the recorder asserts that heartbeats were seen)', () => {
    assert.deepEqual(checkSplitBrain({ lock: { kind: 'Lease', name: 'l', heartbeat: 'h' }, configMaps: [], leases: [] }), []);
  });
});

test("a check's violations as a record keeps them: the unobserved apart, kinds and sentences only where two leaders were seen", () => {
  const violation = (kind: ViolationKind, explanation: string): Violation => ({ kind, firstRv: 1n, lastRv: 2n, writes: 1, explanation });
  assert.deepEqual(tallySplitBrain([]), { splitBrain: 0, unobserved: 0 });
  assert.deepEqual(tallySplitBrain([violation('unobserved', 'unseen')]), { splitBrain: 0, unobserved: 1 });
  assert.deepEqual(tallySplitBrain([violation('interleaved', 'a after b'), violation('unobserved', 'unseen'), violation('seq-regressed', 'from 9 to 1')]), {
    splitBrain: 2,
    unobserved: 1,
    splitBrainKinds: ['interleaved', 'seq-regressed'],
    splitBrainFindings: ['a after b', 'from 9 to 1'],
  });
});
