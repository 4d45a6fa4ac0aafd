/**
 * The record `npm run bench:failover` writes (one JSON object per line) and
 * docs/failover.md and docs/failover.svg are rendered from: a `run` line
 * first, then one `trial` line per failover.
 */
import type { TrialOutcome } from '../support/failover-trial.ts';

export interface RunRecord {
  kind: 'run';
  /** The command line, as a user would type it. */
  command: string;
  startedAt: string;
  finishedAt?: string;
  /** Where it ran: `nproc`, the Kubernetes version, anything a reader needs to weigh the numbers. */
  machine: string;
  /** How long a trial waits for a new leader before it counts as "never within". */
  timeoutMs: number;
}

export interface TrialRecord extends Omit<TrialOutcome, 'marks' | 'operator'> {
  kind: 'trial';
  /** An operator of test/operators (failover-trial.ts's, or kopf-operator for bench:kopf). */
  operator: string;
  scenario: string;
  withLeaderhook: boolean;
  /** 1-based, per scenario and mode. */
  trial: number;
  /** Heartbeats written by a process that did not hold the lock at that revision, in this trial's window. */
  splitBrain: number;
}

export type FailoverRecord = RunRecord | TrialRecord;

/**
 * The phases of a trial, in the order they happen, with the field each is read
 * from; `onlyWithLeaderhook` where the phase has no meaning without it (there is
 * no hook to get a SIGTERM), so a missing time there is not "never".
 */
export const PHASES = [
  { key: 'operatorExitedMs', label: 'old operator exited' },
  { key: 'hookSigtermMs', label: 'hook SIGTERM', onlyWithLeaderhook: true },
  { key: 'lockFreedMs', label: 'lock gone' },
  { key: 'oldPodGoneMs', label: 'old pod gone' },
  { key: 'newLeaderMs', label: 'new leader' },
] as const satisfies readonly { key: keyof TrialRecord; label: string; onlyWithLeaderhook?: true }[];

/** What each scenario is, for the reader of docs/failover.md. */
export const SCENARIOS: Record<string, string> = {
  'lfl-rollout': 'leader-for-life operator (operator-lib), Deployment of 2: the leader pod deleted, as a rollout or `kubectl delete pod` does',
  'lease-rollout': 'Lease operator (controller-runtime, 15 s lease, no ReleaseOnCancel), Deployment of 2: the leader pod deleted',
  'lfl-stuck-terminating':
    'leader-for-life operator, Deployment of 2: the leader pod deleted but held Terminating by a finalizer after its containers stopped (a stuck volume detach, a controller that never removes its finalizer)',
  'client-go-rollout': 'client-go LeaderElector operator (Lease held as the pod name, 15 s lease, no ReleaseOnCancel), Deployment of 2: the leader pod deleted',
  'josdk-rollout':
    "Java Operator SDK operator (fabric8's LeaderElector, Lease held as $HOSTNAME, 15 s lease, releaseOnCancel off), Deployment of 2: the leader pod deleted",
  'client-go-failed':
    'client-go LeaderElector operator, as client-go-rollout: the leader failed by its kubelet (activeDeadlineSeconds set while it leads), never deleted, as an evicted pod or one on a node shut down stays Failed; times from the deadline being set',
  'josdk-failed':
    'Java Operator SDK operator, as josdk-rollout: the leader failed by its kubelet (activeDeadlineSeconds set while it leads), never deleted; times from the deadline being set',
  'client-go-stuck-terminating':
    'client-go LeaderElector operator, as client-go-rollout: the leader pod deleted but held Terminating by a finalizer after its containers stopped',
  'josdk-stuck-terminating':
    'Java Operator SDK operator, as josdk-rollout: the leader pod deleted but held Terminating by a finalizer after its containers stopped',
  'kopf-crash':
    "kopf operator (peering entries under the pod's UID, 60 s lifetime), two pods of priorities 100 and 99: the leader pod deleted, its operator exiting at once on SIGTERM without kopf's cleanup (npm run bench:kopf)",
  'kopf-killed':
    'kopf operator, as kopf-crash: the leader pod deleted while its operator ignores SIGTERM, SIGKILLed at the end of its 10 s grace period (npm run bench:kopf)',
  'kopf-failed':
    'kopf operator, as kopf-crash: the leader failed by its kubelet (activeDeadlineSeconds set while it leads; SIGTERM ignored, 2 s grace), never deleted; times from the deadline being set (npm run bench:kopf)',
};

/** The operators whose lock is a Lease: the Lease targets apply to their scenarios. */
export const LEASE_OPERATORS: readonly string[] = ['lease-operator', 'client-go-operator', 'josdk-operator'];

/**
 * The scenarios in which rule R1 should free the lock: the leader stops well
 * before its deadline, so its hook's SIGTERM comes in time. The target "lock
 * gone p99 ≤ 250 ms after the delete" applies to these.
 */
export const RELEASED_BY_R1: readonly string[] = [
  'lfl-rollout',
  'lease-rollout',
  'lfl-stuck-terminating',
  'client-go-rollout',
  'josdk-rollout',
  'client-go-stuck-terminating',
  'josdk-stuck-terminating',
  'kopf-crash',
];

/** The lines of a benchmark's record, each a JSON object; `what` names the record in an error. */
export function parseJsonLines<T>(text: string, what: string): T[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      try {
        return JSON.parse(line) as T;
      } catch (error) {
        throw new Error(`line ${i + 1} of the ${what} is not JSON: ${(error as Error).message}`, { cause: error });
      }
    });
}

export const parseRecords = (text: string): FailoverRecord[] => parseJsonLines<FailoverRecord>(text, 'failover record');
