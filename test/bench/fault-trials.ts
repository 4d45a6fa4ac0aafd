/**
 * The record `npm run bench:faults` writes (one JSON object per line) and
 * docs/faults.md is rendered from: a `run` line first (the same as the
 * failover benchmark's), then one `fault-trial` line per scenario, mode and
 * trial.
 */
import { parseJsonLines, type RunRecord } from './failover-trials.ts';

/** What a fault should lead to: another pod leading, the leader keeping its lock, or a leader in either pod (the race after a crash). */
export type Expectation = 'failover' | 'lock kept' | 'a leader in either pod';

/** Who holds the lock once the trial is over: another pod, still the old leader (running or not), or nobody. */
export type FaultOutcome = 'new leader' | 'lock kept' | 'no leader';

export interface FaultTrialRecord {
  kind: 'fault-trial';
  scenario: string;
  withLeaderhook: boolean;
  /** 1-based, per scenario and mode. */
  trial: number;
  expected: Expectation;
  outcome: FaultOutcome;
  leaderBefore: string;
  leaderAfter?: string;
  /** Milliseconds after the fault (what `zero` of the scenario names) until another pod held the lock; undefined if none did in time. */
  newLeaderMs?: number;
  /** Milliseconds after the fault until the old leader's lock was freed; undefined if it was not. */
  lockFreedMs?: number;
  freedBy: string;
  /** The rules of the hooks' LeaderLockReleased Events in the trial's namespace (R1, R2...). */
  releases: string[];
  /** Restarts of release hook containers during the trial. */
  hookRestarts: number;
  /** Split-brain episodes in the trial's namespace (test/support/split-brain.ts): heartbeats by a process not holding the lock, two writing in turns... */
  splitBrain: number;
  /** Their kinds, where there were any. */
  splitBrainKinds?: string[];
  /** The checker's sentence for each of them; absent in records before it was kept. */
  splitBrainFindings?: string[];
  /** Stretches of the lock's history the recorder could not see (a watch relisted), which the checker cannot vouch for. */
  unobserved: number;
  /**
   * Milliseconds after the fault until a process led again, a new one in
   * either pod (its "became leader" line): where the old leader's own pod can
   * lead again, the time nobody led. Only the scenarios that follow it.
   */
  ledAgainMs?: number;
  /** Milliseconds between the lock's last write the recording saw before the fault and the fault. */
  sinceLockWriteMs?: number;
  /** What else the trial saw, in a few words (the evicted pod's phase, a refused replacement...). */
  detail?: string;
}

export type FaultRecord = RunRecord | FaultTrialRecord;

export interface FaultScenarioText {
  /** What is done, for the reader of docs/faults.md. */
  description: string;
  /** The moment the times of the trial count from. */
  zero: string;
  expected: Expectation;
}

/** Every scenario of the fault benchmark, in report order. */
export const FAULT_SCENARIOS: Record<string, FaultScenarioText> = {
  'lfl-rollout-restart': {
    description: '`kubectl rollout restart` of a Deployment of 2 lfl-operator (maxSurge 25 %: one new pod at a time, then an old one goes)',
    zero: 'the rollout restart',
    expected: 'failover',
  },
  'lease-rollout-restart': {
    description: '`kubectl rollout restart` of a Deployment of 2 lease-operator (controller-runtime, 15 s lease, no ReleaseOnCancel)',
    zero: 'the rollout restart',
    expected: 'failover',
  },
  eviction: {
    description:
      'two bare lfl-operator pods; the leader writes past its 16 Mi ephemeral-storage limit and the kubelet evicts it; the RBAC lets operator-lib get but not delete pods',
    zero: "the kubelet's Evicted Event",
    expected: 'failover',
  },
  'eviction-pods-delete': {
    description:
      "as eviction, with the scaffold's RBAC (pods: *), so operator-lib's own remedy applies: its standby deletes a leader whose status says Evicted",
    zero: "the kubelet's Evicted Event",
    expected: 'failover',
  },
  'crash-restart': {
    description: "two bare lfl-operator pods; the leader's operator exits 1 (`--crash-after`) and the kubelet restarts it in the same pod",
    zero: 'the operator\'s "crashing" line',
    expected: 'lock kept',
  },
  'lease-crash-restart': {
    description:
      "a Deployment of 2 lease-operator (controller-runtime, 15 s lease, no ReleaseOnCancel); the leader's operator process killed (SIGKILL by its PID, as the soak's crash) and restarted by the kubelet in the same pod, under a new identity: whichever pod's operator finds the Lease run out first leads",
    zero: 'the SIGKILL',
    expected: 'a leader in either pod',
  },
  'node-not-ready': {
    description: 'a Deployment of 2 lfl-operator; the kubelet stopped until the node is NotReady (the containers keep running), held 30 s, then started again',
    zero: 'the node seen NotReady',
    expected: 'lock kept',
  },
  'apiserver-restart': {
    description:
      'a Deployment of 2 lfl-operator; the kube-apiserver killed (SIGKILL), down 5 s and started again; once the kubelet acts again, the leader pod is deleted',
    zero: 'the delete of the leader pod, after the outage',
    expected: 'failover',
  },
  'lfl-node-drain': {
    description:
      '3 nodes; a Deployment of 2 lfl-operator, the leader on the node to drain with one webhook replica, the standby on another; `kubectl drain` of that node (evictions through the Eviction API, PDBs honoured)',
    zero: 'the drain',
    expected: 'failover',
  },
  'lease-node-drain': {
    description: 'as lfl-node-drain, with a Deployment of 2 lease-operator (controller-runtime, 15 s lease, no ReleaseOnCancel)',
    zero: 'the drain',
    expected: 'failover',
  },
  'node-cut-off': {
    description:
      "3 nodes; a Deployment of 2 lfl-operator, the leader on a node that is then cut off from the API server (its kubelet and containers keep running) until NotReady; then the safe remedy: the node's kubelet and containers stopped, and the `node.kubernetes.io/out-of-service` taint",
    zero: 'the out-of-service taint',
    expected: 'failover',
  },
  'webhook-down-enabled': {
    description:
      'a Deployment of 2 lfl-operator that sets POD_NAME itself, in an `enabled` namespace; the webhook scaled to 0, then the leader pod deleted (its replacement is created uninjected)',
    zero: 'the delete of the leader pod, the webhook down',
    expected: 'failover',
  },
  'webhook-down-required': {
    description:
      'a Deployment of 2 lfl-operator that relies on the webhook for POD_NAME, in a `required` namespace; the webhook scaled to 0, then the leader pod deleted (its replacement is refused until the webhook is back)',
    zero: 'the delete of the leader pod, the webhook down',
    expected: 'failover',
  },
};

export const parseFaultRecords = (text: string): FaultRecord[] => parseJsonLines<FaultRecord>(text, 'fault record');
