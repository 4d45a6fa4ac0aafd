/**
 * A failover's timeline: marks (what happened when, by the recording), the
 * ones every scenario shares, printed as seconds after the delete, and the
 * order two of them must come in.
 */
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import type { TestContext } from 'node:test';
import type { V1Lease } from '@kubernetes/client-node';
import { type LeaderLock, OPERATOR_CONTAINER } from './operators.ts';
import type { LogLine, Recording } from './recorder.ts';
import {
  firstHeartbeatOf,
  hookSigtermLine,
  lastHeartbeatOf,
  lastRenewal,
  leaderlessLease,
  logOf,
  operatorExited,
  podGone,
  releaseEvents,
} from './recording.ts';
import type { Failover, Takeover } from './takeover.ts';

export interface Mark {
  label: string;
  at: number;
}

/**
 * Prints `marks` as seconds after `zero` (test diagnostics) and, when `out`
 * names a file, appends them there as one JSON line.
 */
export function printTimeline(t: TestContext, scenario: string, marks: Mark[], zero: number, out = process.env.LEADERHOOK_BASELINE_OUT): void {
  const lines = [...marks].sort((a, b) => a.at - b.at).map((mark) => `${((mark.at - zero) / 1000).toFixed(3).padStart(8)} s  ${mark.label}`);
  t.diagnostic(`${scenario} failover timeline (seconds after the delete was issued):`);
  for (const line of lines) t.diagnostic(line);
  if (out) {
    const entry = {
      operator: scenario,
      recordedAt: new Date(zero).toISOString(),
      marks: marks.map((mark) => ({ label: mark.label, seconds: Number(((mark.at - zero) / 1000).toFixed(3)) })),
    };
    appendFileSync(out, `${JSON.stringify(entry)}\n`);
  }
}

export function mark(label: string, at: number | undefined): Mark[] {
  return at === undefined ? [] : [{ label, at }];
}

export function assertBefore(first: { label: string; at: number | bigint | undefined }, second: { label: string; at: number | bigint | undefined }): void {
  assert.ok(first.at !== undefined, `${first.label} was observed`);
  assert.ok(second.at !== undefined, `${second.label} was observed`);
  assert.ok(first.at <= second.at, `${first.label} (${first.at}) comes before ${second.label} (${second.at})`);
}

// Timeline marks every scenario shares; each scenario adds its own between them.

/** The delete and the old leader's stop as it logged it. */
export function oldLeaderMarks<L>(recording: Recording, lock: LeaderLock<L>, leader: string, deleteIssued: number): Mark[] {
  return [
    ...mark('delete issued', deleteIssued),
    ...mark('old leader logged "stopping" (SIGTERM)', logOf(recording, leader, 'stopping')?.at),
    ...mark('old leader logged "signal ignored" (SIGTERM)', logOf(recording, leader, 'signal ignored')?.at),
    ...mark('old leader wrote its last heartbeat', lastHeartbeatOf(recording, lock, leader)?.at),
    ...mark('old leader logged "stopped"', logOf(recording, leader, 'stopped')?.at),
  ];
}

/** The way of `lock`, a Lease, from the old leader's last renewal to the new holder; `expiry` names the old lease's end. */
export function leaseMarks(recording: Recording, lock: LeaderLock<V1Lease>, leader: string, taken: Takeover<V1Lease>, expiry: string): Mark[] {
  const renewal = lastRenewal(recording, lock, leader);
  const acquireTime = taken.taken.object.spec?.acquireTime;
  return [
    ...mark('lease last renewed by the old leader (renewTime)', renewal.renewedAt),
    ...mark(`${expiry} (renewTime + ${renewal.durationSeconds} s)`, renewal.expiresAt),
    ...mark(`lease acquired by ${taken.newLeader} (acquireTime)`, acquireTime ? new Date(acquireTime).getTime() : undefined),
    ...mark('lease holder change seen (watch)', taken.taken.at),
  ];
}

/** The old pod's release hook: when it got SIGTERM (its own "signalAt") and what it logged about it. */
export function hookMarks(line: LogLine | undefined): Mark[] {
  if (!line) return [];
  const signalAt = typeof line.fields.signalAt === 'string' ? Date.parse(line.fields.signalAt) : undefined;
  return [...mark('old pod\'s hook got SIGTERM (its "signalAt")', signalAt), ...mark(`old pod's hook logged ${JSON.stringify(line.msg)}`, line.at)];
}

/** A Lease failover with leaderhook: the old leader's stop, its hook's release record, the lease's way to the new holder. */
export function hookedLeaseMarks(recording: Recording, lock: LeaderLock<V1Lease>, failover: Failover<V1Lease>): Mark[] {
  const { leader, deleteIssued, newLeader } = failover;
  const released = releaseEvents(recording, leader, 'R1');
  return [
    ...oldLeaderMarks(recording, lock, leader, deleteIssued),
    ...mark('old container seen exited (watch)', operatorExited(recording, leader)?.at),
    ...hookMarks(hookSigtermLine(recording, leader)),
    ...mark('leaderless lease record seen (watch)', leaderlessLease(recording, lock, deleteIssued)?.at),
    ...mark(`LeaderLockReleased Event for the old pod (watch): ${released[0]?.object.message ?? ''}`, released[0]?.at),
    ...mark('old pod object gone (watch)', podGone(recording, leader)?.at),
    ...leaseMarks(recording, lock, leader, failover, 'old lease would have expired'),
    ...newLeaderMarks(recording, lock, newLeader),
  ];
}

/** A Lease failover without a release: the old leader's stop, its pod gone, the lease's expiry and new holder. */
export function expiredLeaseMarks(recording: Recording, lock: LeaderLock<V1Lease>, failover: Failover<V1Lease>): Mark[] {
  const { leader, deleteIssued, newLeader } = failover;
  return [
    ...oldLeaderMarks(recording, lock, leader, deleteIssued),
    ...mark('old container seen exited (watch)', operatorExited(recording, leader)?.at),
    ...mark('old pod object gone (watch)', podGone(recording, leader)?.at),
    ...leaseMarks(recording, lock, leader, failover, 'lease expired'),
    ...newLeaderMarks(recording, lock, newLeader),
  ];
}

/** The new leader's start. */
export function newLeaderMarks<L>(recording: Recording, lock: LeaderLock<L>, newLeader: string): Mark[] {
  return [
    ...mark('new leader logged "became leader"', logOf(recording, newLeader, 'became leader')?.at),
    ...mark('new leader wrote its first heartbeat', firstHeartbeatOf(recording, lock, newLeader)?.at),
  ];
}

/** operator-lib's own lines of the new leader up to its win, from 20 s before the delete: its backoff, retry by retry. */
export function operatorLibRetryMarks(recording: Recording, newLeader: string, deleteIssued: number): Mark[] {
  const became = logOf(recording, newLeader, 'became leader');
  return recording.logs
    .filter(
      (line) =>
        line.pod === newLeader &&
        line.container === OPERATOR_CONTAINER &&
        line.at > deleteIssued - 20_000 &&
        line.at < (became?.at ?? Number.POSITIVE_INFINITY) &&
        String(line.fields.logger).endsWith('/leader') &&
        line.fields.error === undefined,
    )
    .map((line) => ({ label: `  new leader, operator-lib: ${JSON.stringify(line.msg)}`, at: line.at }));
}
