/**
 * One failover trial of a two-replica operator Deployment, read off a
 * recording (test/support/recording.ts): wait for a steady leader, delete it,
 * and follow the failover to its new leader, with the time of every phase.
 * Shared by `npm run demo` (scripts/demo) and `npm run bench:failover`
 * (test/bench/failover.bench.ts), which run several operators in one
 * namespace: everything here is per operator (pods by name prefix, the lock
 * by name), never "any pod of the namespace".
 */
import type { V1Lease } from '@kubernetes/client-node';
import { core } from './kube.ts';
import { waitFor } from './wait.ts';
import { deleteNamespaceAndWait, grantReleaseHook, INJECTION_LABEL } from './leaderhook.ts';
import {
  applyOperatorRbac,
  createOperator,
  type LeaderLock,
  leaderLockOf,
  OPERATOR_CONTAINER,
  type OperatorOptions,
  RELEASE_HOOK_CONTAINER,
  record,
} from './operators.ts';
import { heartbeats, hookSignalTime, lastRenewal, logOf, loggedBy, operatorExited, releaseEvents, waitForRecorded } from './recording.ts';
import { type Mark, mark } from './timeline.ts';
import { waitForNewLeaderRunning, waitForTakeover } from './takeover.ts';
import type { Recording } from './recorder.ts';

export type OperatorName = 'lfl-operator' | 'lease-operator' | 'client-go-operator' | 'josdk-operator';

export function lockOf(operator: OperatorName): LeaderLock<unknown> {
  return leaderLockOf(operator) as LeaderLock<unknown>;
}

export interface OperatorsNamespace {
  name: string;
  withLeaderhook: boolean;
  recording: Recording;
}

/**
 * Namespace `name` (any earlier one already gone) under restricted Pod
 * Security, opted in to leaderhook with `injectionLabel` where
 * `withLeaderhook`; resolves once its default ServiceAccount exists, which
 * every pod of it needs.
 */
export async function createOperatorNamespace(
  name: string,
  {
    withLeaderhook,
    labels = {},
    injectionLabel = INJECTION_LABEL,
  }: { withLeaderhook: boolean; labels?: Record<string, string>; injectionLabel?: Record<string, string> },
): Promise<void> {
  await core.createNamespace({
    body: {
      metadata: { name, labels: { ...labels, 'pod-security.kubernetes.io/enforce': 'restricted', ...(withLeaderhook ? injectionLabel : {}) } },
    },
  });
  await waitFor(`ServiceAccount default in ${name}`, () => core.readNamespacedServiceAccount({ name: 'default', namespace: name }), 30_000);
}

/**
 * Creates (or re-creates) namespace `name` with a two-replica Deployment of
 * each of `operators` (test/operators/manifests), recorded from before the
 * first pod exists. With leaderhook: opted in, and the hook's Role bound to
 * the operators' ServiceAccount before any pod starts; the webhook adds
 * POD_NAME, so the manifests' own is removed. Restricted Pod Security: the
 * pods must pass it injected or not.
 */
export async function createOperatorsNamespace(
  name: string,
  {
    withLeaderhook,
    operators,
    labels = {},
    injectionLabel = INJECTION_LABEL,
    podNameFromWebhook = withLeaderhook,
    operatorOptions = {},
  }: {
    withLeaderhook: boolean;
    operators: readonly OperatorName[];
    labels?: Record<string, string>;
    /** The opt-in label (with leaderhook): `enabled` unless told. */
    injectionLabel?: Record<string, string>;
    /** Leave POD_NAME to the webhook (the manifests' own removed); by default with leaderhook. */
    podNameFromWebhook?: boolean;
    /** Extra arguments and pod annotations of every operator. */
    operatorOptions?: Pick<OperatorOptions, 'extraArgs' | 'annotations'>;
  },
): Promise<OperatorsNamespace> {
  await deleteNamespaceAndWait(name);
  await createOperatorNamespace(name, { withLeaderhook, labels, injectionLabel });
  const recording = await record(name, withLeaderhook ? [OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER] : [OPERATOR_CONTAINER]);
  await applyOperatorRbac(name);
  if (withLeaderhook) await grantReleaseHook(name, 'test-operator');
  for (const operator of operators) await createOperator(name, operator, { ...operatorOptions, shape: 'deployment', withoutPodNameEnv: podNameFromWebhook });
  return { name, withLeaderhook, recording };
}

/**
 * The pod that leads `operator` now: it holds the lock, wrote 10 heartbeats
 * since `since`, and another replica that is not being deleted has tried
 * for the lock (a standby is in place). With `since` the end of the last
 * trial, this is the steady state the next trial starts from.
 */
export async function waitForLeader(recording: Recording, operator: OperatorName, description: string, since = 0, timeoutMs = 120_000): Promise<string> {
  const lock = lockOf(operator);
  return waitForRecorded(
    recording,
    `${operator} in ${description} to have a leader and a standby`,
    async () => {
      const holder = lock.holderOf(lock.events(recording).at(-1)?.object);
      if (!holder) return undefined;
      const beats = heartbeats(recording, lock.heartbeat).filter((beat) => beat.holder === holder && beat.at >= since).length;
      // A standby: another replica, still there and not being deleted, that has tried for the lock.
      const standby = loggedBy(recording, 'trying').some((line) => {
        const pod = recording.podNow.get(line.pod);
        return line.pod.startsWith(`${operator}-`) && line.pod !== holder && pod !== undefined && !pod.metadata?.deletionTimestamp;
      });
      return beats >= 10 && standby && holder;
    },
    timeoutMs,
  );
}

/** A failover as it happened; `*Ms` are milliseconds after the delete was issued, undefined where it did not happen (in time). */
export interface TrialOutcome {
  operator: OperatorName;
  oldLeader: string;
  newLeader?: string;
  deleteIssued: number;
  operatorExitedMs?: number;
  hookSigtermMs?: number;
  lockFreedMs?: number;
  /** What freed the lock: the hook's rule, the garbage collector, the Lease running out; "not freed" when nothing did in time. */
  freedBy: string;
  oldPodGoneMs?: number;
  newLeaderMs?: number;
  /** Every phase as absolute times (ms since the epoch), for a timeline. */
  marks: Mark[];
}

const since = (at: number | undefined, zero: number) => (at === undefined ? undefined : at - zero);

/**
 * Waits up to `timeoutMs` for another pod to hold `operator`'s lock and lead,
 * then reads every phase off the recording. A failover that does not happen
 * in time is an outcome too (no new leader), not an error: where the baseline
 * deadlocks that is the result.
 */
export async function followFailover(
  recording: Recording,
  operator: OperatorName,
  leader: string,
  deleteIssued: number,
  { timeoutMs, untilOldPodGone = true }: { timeoutMs: number; untilOldPodGone?: boolean },
): Promise<TrialOutcome> {
  const lock = lockOf(operator);
  let newLeader: string | undefined;
  let takenAt: number | undefined;
  try {
    const taken = await waitForTakeover(recording, lock, leader, deleteIssued, timeoutMs);
    newLeader = lock.holderOf(taken.object);
    takenAt = taken.at;
    if (newLeader) await waitForNewLeaderRunning(recording, lock, newLeader);
    if (untilOldPodGone) {
      const left = Math.max(1000, deleteIssued + timeoutMs - Date.now());
      await waitForRecorded(recording, `pod ${leader} to be gone`, async () => podGoneAt(recording, leader), left);
    }
  } catch (error) {
    if (!/timed out/.test((error as Error).message)) throw error;
  }
  const gone = podGoneAt(recording, leader);
  const freed = lockFreedAt(recording, operator, leader, deleteIssued, takenAt);
  const freedBy = freed === undefined ? 'not freed' : (releasedByHook(recording, leader) ?? notReleasedByHook(recording, operator, leader));
  // The operator's own last line is when it exited; the kubelet's status update comes later.
  const exited = logOf(recording, leader, 'stopped')?.at ?? operatorExited(recording, leader)?.at;
  const sigterm = hookSignalTime(recording, leader);
  const became = newLeader ? (logOf(recording, newLeader, 'became leader')?.at ?? takenAt) : undefined;
  return {
    operator,
    oldLeader: leader,
    newLeader,
    deleteIssued,
    operatorExitedMs: since(exited, deleteIssued),
    hookSigtermMs: since(sigterm, deleteIssued),
    lockFreedMs: since(freed, deleteIssued),
    freedBy,
    oldPodGoneMs: since(gone, deleteIssued),
    newLeaderMs: since(became, deleteIssued),
    marks: [
      ...mark('delete issued', deleteIssued),
      ...mark('old operator exited', exited),
      ...mark('release hook got SIGTERM', sigterm),
      ...mark('lock freed', freed),
      ...mark('old pod object gone', gone),
      ...mark(`new leader ${newLeader} logged "became leader"`, became),
    ],
  };
}

/** What each rule of the release hook stands for (docs/design.md#the-release-rules). */
const RULES: Record<string, string> = {
  R0: 'release hook, rule R0 (its own stale lock at start)',
  R1: 'release hook, rule R1 (SIGTERM after the operator stopped)',
  R2: 'release hook, rule R2 (the holder can never run again)',
  R3: 'release hook, rule R3 (the holder pod is gone)',
};

/** The rule of the first release of `leader`'s lock by a hook (its own or another pod's), if any. */
export function releasedByHook(recording: Recording, leader: string): string | undefined {
  const rule = releaseEvents(recording, leader)[0]?.object.message?.match(/\((R\d):/)?.[1];
  return rule === undefined ? undefined : (RULES[rule] ?? `release hook, rule ${rule}`);
}

function notReleasedByHook(recording: Recording, operator: OperatorName, leader: string): string {
  const lock = leaderLockOf(operator);
  return lock.kind === 'ConfigMap'
    ? 'garbage collector (after the pod object was gone)'
    : `Lease ran out (last renewal + ${lastRenewal(recording, lock as LeaderLock<V1Lease>, leader).durationSeconds ?? '?'} s)`;
}

function podGoneAt(recording: Recording, pod: string): number | undefined {
  return recording.pods.find((event) => event.type === 'DELETED' && event.object.metadata?.name === pod)?.at;
}

/**
 * When the lock stopped naming the old leader: the ConfigMap's deletion, or
 * the Lease written leaderless (the hook's release) — or, where nobody
 * released the Lease, the moment it ran out, which no write records.
 */
function lockFreedAt(recording: Recording, operator: OperatorName, leader: string, since: number, takenAt: number | undefined): number | undefined {
  const lock = leaderLockOf(operator);
  if (lock.kind === 'ConfigMap') {
    return lock.events(recording).find((event) => event.at > since && event.type === 'DELETED')?.at;
  }
  const lease = lock as LeaderLock<V1Lease>;
  const leaderless = lease.events(recording).find((event) => event.at > since && event.type !== 'DELETED' && lease.holderOf(event.object) === undefined);
  if (leaderless) return leaderless.at;
  if (takenAt === undefined) return undefined;
  return Math.min(lastRenewal(recording, lease, leader).expiresAt ?? takenAt, takenAt);
}
