/**
 * `npm run bench:faults`: the faults users meet, each N times with
 * leaderhook and without, on the local cluster; the record and docs/faults.md.
 *
 *   npm run bench:faults -- [--trials 1] [--trials-of eviction=5 ...] [--scenario eviction --scenario ...]
 *     [--timeout 45] [--out docs/faults-trials.jsonl] [--docs docs]
 *
 * Every trial starts from a fresh pair of namespaces, one opted in to
 * leaderhook (installed from deploy/) and one not, both put through the same
 * fault at the same moment (fault-trials.ts says what each scenario does and
 * what it should lead to), and follows who holds the lock: a new leader,
 * the same one, or nobody within the timeout. Faults of the whole cluster
 * (the kubelet, the API server, the webhook) hit both namespaces at once by
 * their nature. The e2e tests (test/e2e/eviction, crash-restart,
 * node-not-ready, apiserver-restart, admission) run each fault once and
 * assert; this counts over many trials. Runs inside the cluster's network
 * namespace (the npm script enters it; the Kubernetes client refuses to run
 * outside).
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { OPERATOR_CONTAINER, RELEASE_HOOK_CONTAINER } from '../support/operators.ts';
import { loggedBy, splitBrainViolations } from '../support/recording.ts';
import type { Recording } from '../support/recorder.ts';
import { createOperatorsNamespace, followFailover, lockOf, type OperatorName, releasedByHook, waitForLeader } from '../support/failover-trial.ts';
import {
  bareOperatorPod,
  clusterProcessFaultsUnavailable,
  createLeaderAndStandby,
  evictableOperatorPod,
  killAndRestartApiServer,
  scaleWebhook,
  startStoppedComponents,
  waitForEviction,
  waitForKubeletToAct,
  whileNodeNotReady,
} from '../support/faults.ts';
import { apps, connectTestCluster, core, refuseLeftovers } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { deleteNamespaceAndWait, INJECTION_LABEL, installLeaderhook, kubectl, REQUIRED_INJECTION_LABEL } from '../support/leaderhook.ts';
import { leadersOn, webhookPodsOn } from '../support/node-leaders.ts';
import {
  type ClusterNode,
  clusterNodes,
  cutOff,
  drain,
  fewerNodesThan,
  nodeReadyStatus,
  OUT_OF_SERVICE_TAINT,
  removeOutOfServiceTaint,
  stopNode,
  uncordon,
} from '../support/nodes.ts';
import { type LockUnderTest, type SplitBrainTally, tallySplitBrain } from '../support/split-brain.ts';
import { optionsOrExit } from './bench-args.ts';
import { sigkillContainer } from './container-cgroup.ts';
import { FAULT_SCENARIOS, type FaultTrialRecord, parseFaultRecords } from './fault-trials.ts';
import { writeFaultsReport } from './faults-report.ts';
import { finishRunRecord, parseTrialArgs, runRecord, say, trialOptionsUsage } from './trial-args.ts';

const SCENARIO_NAMES = Object.keys(FAULT_SCENARIOS);
const usage = `usage: npm run bench:faults -- [--trials 1] [--scenario NAME ...] [--timeout 45] [--out FILE] [--docs DIR]

${trialOptionsUsage(SCENARIO_NAMES, 45, false)}
  (--docs: faults.md)
`;
const args = optionsOrExit('bench:faults', usage, () =>
  parseTrialArgs(process.argv.slice(2), {
    scenarios: SCENARIO_NAMES,
    usage,
    defaultTimeoutSeconds: 45,
    outPrefix: 'leaderhook-faults',
    appendable: false,
  }),
);
// options first: --help and a bad option answer on any machine
connectTestCluster();
await refuseLeftovers('bench:faults');
const { timeoutMs, out } = args;
const MODES = [true, false] as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One namespace of a trial, recorded from before its first pod. */
interface TrialSide {
  namespace: string;
  withLeaderhook: boolean;
  operator: OperatorName;
  recording: Recording;
  leader: string;
}

const holderAt = (side: TrialSide, event: { type: string; object: unknown } | undefined) =>
  event === undefined || event.type === 'DELETED' ? undefined : lockOf(side.operator).holderOf(event.object);

/** The lock's holder now, as the recording last saw it; undefined while there is no lock or it names nobody. */
function holderNow(side: TrialSide): string | undefined {
  return holderAt(side, lockOf(side.operator).events(side.recording).at(-1));
}

/**
 * The hooks' releases in the namespace, by rule, each once: an R2 or R3
 * release is reported on the holder's pod and again, " (by this pod's
 * release hook)", on the releasing pod.
 */
function releaseRules(recording: Recording): string[] {
  const messages = new Set(
    recording.events
      .filter((e) => e.type === 'ADDED' && e.object.reason === 'LeaderLockReleased')
      .map((e) => (e.object.message ?? '').replace(/ \(by this pod's release hook\)$/, '')),
  );
  return [...messages].map((message) => message.match(/\((R\d):/)?.[1] ?? 'unknown rule');
}

/** Restarts of the hook containers over the whole recording: per pod the highest count seen, so a pod deleted since still counts. */
function hookRestarts(recording: Recording): number {
  const highest = new Map<string, number>();
  for (const { object: pod } of recording.pods) {
    for (const status of pod.status?.initContainerStatuses ?? []) {
      if (status.name !== RELEASE_HOOK_CONTAINER) continue;
      const uid = pod.metadata?.uid ?? '';
      highest.set(uid, Math.max(highest.get(uid) ?? 0, status.restartCount));
    }
  }
  return [...highest.values()].reduce((sum, n) => sum + n, 0);
}

/** The first time after `zero` that the lock named another pod than the trial's leader. */
function takenOverAt(side: TrialSide, zero: number): number | undefined {
  return lockOf(side.operator)
    .events(side.recording)
    .find((e) => e.at > zero && ![undefined, side.leader].includes(holderAt(side, e)))?.at;
}

/** The first time after `zero` that the lock was deleted (a ConfigMap lock) or written leaderless (a Lease released). */
function freedAt(side: TrialSide, zero: number): number | undefined {
  return lockOf(side.operator)
    .events(side.recording)
    .find((e) => e.at > zero && holderAt(side, e) === undefined)?.at;
}

/**
 * Split-brain episodes of the trial's namespace, and apart from them the
 * stretches of the lock's history the recorder could not see (a watch that
 * had to relist, as after an API server restart): the checker cannot vouch
 * for those, but they are not two leaders seen.
 */
function splitBrainCounts(side: TrialSide): SplitBrainTally {
  return tallySplitBrain(splitBrainViolations(side.recording, lockOf(side.operator) as LockUnderTest));
}

/** The trial's line of the record, read off its side's recording once the trial is over. */
function trialRecord(scenario: string, trial: number, side: TrialSide, facts: Partial<FaultTrialRecord> & { zero: number }): FaultTrialRecord {
  const { zero, ...rest } = facts;
  const after = holderNow(side);
  const takenAt = takenOverAt(side, zero);
  // Where the trial did not follow a failover itself: was the lock freed anyway, and by whom?
  const releasedAt = freedAt(side, zero);
  const unreleased = takenAt !== undefined && side.operator === 'lease-operator' ? 'Lease ran out (no release written)' : 'not freed';
  return {
    kind: 'fault-trial',
    scenario,
    withLeaderhook: side.withLeaderhook,
    trial,
    expected: FAULT_SCENARIOS[scenario]!.expected,
    outcome: after === undefined ? 'no leader' : after === side.leader ? 'lock kept' : 'new leader',
    leaderBefore: side.leader,
    leaderAfter: after,
    newLeaderMs: takenAt === undefined ? undefined : takenAt - zero,
    lockFreedMs: releasedAt === undefined ? undefined : releasedAt - zero,
    freedBy:
      releasedAt === undefined
        ? unreleased
        : (releasedByHook(side.recording, side.leader) ?? 'deleted, not by a hook (the garbage collector, or operator-lib)'),
    releases: releaseRules(side.recording),
    hookRestarts: hookRestarts(side.recording),
    ...splitBrainCounts(side),
    ...rest,
  };
}

async function dispose(sides: readonly TrialSide[]): Promise<void> {
  for (const side of sides) await side.recording.stop();
  for (const side of sides) await deleteNamespaceAndWait(side.namespace);
}

/** One side per mode, made at once; if either cannot be made, the other is removed again. */
async function bothModes(make: (withLeaderhook: boolean) => Promise<TrialSide>): Promise<TrialSide[]> {
  const made = await Promise.allSettled(MODES.map(make));
  const sides = made.flatMap((m) => (m.status === 'fulfilled' ? [m.value] : []));
  const failed = made.find((m): m is PromiseRejectedResult => m.status === 'rejected');
  if (failed) {
    await dispose(sides);
    throw failed.reason;
  }
  return sides;
}

const namespacePrefix = (scenario: string, trial: number, withLeaderhook: boolean) => `faults-${scenario}-${trial}-${withLeaderhook ? 'with' : 'without'}`;

/** Two bare lfl-operator pods per mode, `leader` leading and `standby` trying (test/support/faults.ts). */
function leaderAndStandbyPair(
  scenario: string,
  trial: number,
  { podDelete, pods }: { podDelete: boolean; pods: (withLeaderhook: boolean) => { leader: V1Pod; standby: V1Pod } },
): Promise<TrialSide[]> {
  return bothModes(async (withLeaderhook) => {
    const pair = await createLeaderAndStandby(namespacePrefix(scenario, trial, withLeaderhook), { withLeaderhook, podDelete, ...pods(withLeaderhook) });
    return { namespace: pair.ns.name, withLeaderhook, operator: 'lfl-operator', recording: pair.recording, leader: 'leader' };
  });
}

/** A Deployment of 2 lfl-operator per mode, both with a steady leader and standby. */
async function deploymentPair(
  scenario: string,
  trial: number,
  { operator = 'lfl-operator', ...options }: { operator?: OperatorName; injectionLabel?: Record<string, string>; podNameFromWebhook?: boolean } = {},
): Promise<TrialSide[]> {
  return bothModes(async (withLeaderhook) => {
    const ns = await createOperatorsNamespace(namespacePrefix(scenario, trial, withLeaderhook), {
      withLeaderhook,
      operators: [operator],
      labels: { 'leaderhook.io/bench': 'faults' },
      ...(withLeaderhook ? options : {}),
    });
    const leader = await waitForLeader(ns.recording, operator, ns.name);
    return { namespace: ns.name, withLeaderhook, operator, recording: ns.recording, leader };
  });
}

/** Deletes every side's leader at once and follows each failover; the records, times from the delete. */
async function deleteLeadersAndFollow(scenario: string, trial: number, sides: readonly TrialSide[], detail?: (side: TrialSide) => Promise<string | undefined>) {
  const zero = Date.now();
  await Promise.all(sides.map((side) => core.deleteNamespacedPod({ name: side.leader, namespace: side.namespace })));
  return Promise.all(
    sides.map(async (side) => {
      const outcome = await followFailover(side.recording, side.operator, side.leader, zero, { timeoutMs, untilOldPodGone: false });
      return trialRecord(scenario, trial, side, { zero, lockFreedMs: outcome.lockFreedMs, freedBy: outcome.freedBy, detail: await detail?.(side) });
    }),
  );
}

type TrialRun = (scenario: string, trial: number) => Promise<FaultTrialRecord[]>;

function eviction(podDelete: boolean): TrialRun {
  return async (scenario, trial) => {
    const sides = await leaderAndStandbyPair(scenario, trial, {
      podDelete,
      pods: (withLeaderhook) => ({
        leader: evictableOperatorPod('leader', { withLeaderhook, fillsDisk: true }),
        standby: evictableOperatorPod('standby', { withLeaderhook, fillsDisk: false }),
      }),
    });
    try {
      return await Promise.all(
        sides.map(async (side) => {
          const evicted = await waitForEviction(side.recording, 'leader');
          const outcome = await followFailover(side.recording, 'lfl-operator', 'leader', evicted.at, { timeoutMs, untilOldPodGone: false });
          const status = evicted.pod.status;
          return trialRecord(scenario, trial, side, {
            zero: evicted.at,
            lockFreedMs: outcome.lockFreedMs,
            freedBy: outcome.freedBy,
            detail: `evicted leader ended ${status?.phase}${status?.reason ? `/${status.reason}` : ''}`,
          });
        }),
      );
    } finally {
      await dispose(sides);
    }
  };
}

const CRASH_AFTER_S = 20;

const crashRestart: TrialRun = async (scenario, trial) => {
  const sides = await leaderAndStandbyPair(scenario, trial, {
    podDelete: true,
    pods: (withLeaderhook) => ({
      leader: bareOperatorPod('leader', { withLeaderhook, extraArgs: [`--crash-after=${CRASH_AFTER_S}s`] }),
      standby: bareOperatorPod('standby', { withLeaderhook }),
    }),
  });
  try {
    return await Promise.all(
      sides.map(async (side) => {
        const crashed = await waitFor('the leader to crash', async () => loggedBy(side.recording, 'crashing').find((l) => l.pod === 'leader'), 120_000, 250);
        // The kubelet restarts it at once (the first restart has no back-off); it finds its own lock and leads on.
        const again = await waitFor(
          'the restarted operator to lead again',
          async () => loggedBy(side.recording, 'became leader').find((l) => l.pod === 'leader' && l.at > crashed.at),
          timeoutMs,
          250,
        ).catch(() => undefined);
        // A little of the restarted operator leading, well before it crashes again.
        await sleep(5_000);
        return trialRecord(scenario, trial, side, {
          zero: crashed.at,
          detail: again
            ? `the restarted operator led again after ${((again.at - crashed.at) / 1000).toFixed(1)} s`
            : 'the restarted operator did not lead again',
        });
      }),
    );
  } finally {
    await dispose(sides);
  }
};

/**
 * The soak's crash, alone and many times: the Lease operator's leader process
 * SIGKILLed in both modes at once. leaderhook does not act on it (the pod and
 * its hook keep running), so the two modes should lead again alike; this is
 * the trial that tells a gap between them from chance.
 */
const leaseCrashRestart: TrialRun = async (scenario, trial) => {
  const sides = await deploymentPair(scenario, trial, { operator: 'lease-operator' });
  try {
    const pods = sides.map((side) => side.recording.podNow.get(side.leader));
    if (pods.some((pod) => pod === undefined)) throw new Error('a leader pod is not in its recording');
    const zero = Date.now();
    sides.forEach((side, i) => {
      if (!sigkillContainer(pods[i]!, OPERATOR_CONTAINER)) throw new Error(`${side.namespace}/${side.leader}: its operator container was not running`);
    });
    return await Promise.all(
      sides.map(async (side) => {
        const led = await waitFor(
          'a new process to lead',
          async () => loggedBy(side.recording, 'became leader').find((line) => line.at > zero),
          timeoutMs,
          250,
        ).catch(() => undefined);
        // A little of the new leader leading, for the split-brain check to see both processes' heartbeats end and begin.
        await sleep(3_000);
        const lastWrite = lockOf(side.operator)
          .events(side.recording)
          .filter((event) => event.at <= zero)
          .at(-1);
        const who = led === undefined ? 'nobody led again' : led.pod === side.leader ? "the restarted operator in the leader's pod led" : 'the standby led';
        return trialRecord(scenario, trial, side, {
          zero,
          ledAgainMs: led === undefined ? undefined : led.at - zero,
          sinceLockWriteMs: lastWrite === undefined ? undefined : zero - lastWrite.at,
          detail: who,
        });
      }),
    );
  } finally {
    await dispose(sides);
  }
};

const NOT_READY_HOLD_MS = 30_000;

const nodeNotReady: TrialRun = async (scenario, trial) => {
  const sides = await deploymentPair(scenario, trial);
  try {
    let zero = 0;
    const waitEvents = new Map<TrialSide, string>();
    await whileNodeNotReady(async (notReadyAt) => {
      zero = notReadyAt;
      const hooked = sides.find((side) => side.withLeaderhook)!;
      const held = await waitFor(
        "the standby's hook to say why it waits",
        async () =>
          hooked.recording.events.find(
            (e) => e.object.reason === 'LeaderLockHeld' && e.object.involvedObject?.name !== hooked.leader && /notReady/.test(e.object.message ?? ''),
          ),
        NOT_READY_HOLD_MS * 2,
        1000,
      ).catch(() => undefined);
      waitEvents.set(
        hooked,
        held ? `the standby's LeaderLockHeld Event ${((held.at - notReadyAt) / 1000).toFixed(0)} s into NotReady` : 'no LeaderLockHeld Event',
      );
      await sleep(Math.max(0, notReadyAt + NOT_READY_HOLD_MS - Date.now()));
    });
    // Some leading with the kubelet back.
    await sleep(10_000);
    return sides.map((side) => trialRecord(scenario, trial, side, { zero, detail: waitEvents.get(side) }));
  } finally {
    await dispose(sides);
  }
};

const apiServerRestart: TrialRun = async (scenario, trial) => {
  const sides = await deploymentPair(scenario, trial);
  try {
    const killedAt = await killAndRestartApiServer();
    await waitForKubeletToAct(sides[0]!.namespace);
    const recoveredAt = Date.now();
    // The leaders after the outage (an operator may have exited on it and been restarted).
    for (const side of sides) side.leader = await waitForLeader(side.recording, side.operator, side.namespace, recoveredAt);
    return await deleteLeadersAndFollow(
      scenario,
      trial,
      sides,
      async () => `kubelet acting again ${((recoveredAt - killedAt) / 1000).toFixed(0)} s after the kill`,
    );
  } finally {
    await dispose(sides);
  }
};

function webhookDown(mode: 'enabled' | 'required'): TrialRun {
  return async (scenario, trial) => {
    const sides = await deploymentPair(scenario, trial, {
      injectionLabel: mode === 'enabled' ? INJECTION_LABEL : REQUIRED_INJECTION_LABEL,
      podNameFromWebhook: mode === 'required',
    });
    try {
      await scaleWebhook(0);
      try {
        const before = new Map(sides.map((side) => [side, new Set([...side.recording.podNow.keys()])]));
        return await deleteLeadersAndFollow(scenario, trial, sides, async (side) => {
          if (!side.withLeaderhook) return undefined;
          // The pod the ReplicaSet made for the deleted leader while the webhook was down, or its refusal.
          // The API server's create can take the webhook's whole timeout (5 s) to fail open: wait for it.
          const made = () => [...side.recording.podNow.entries()].filter(([name, pod]) => pod && !before.get(side)!.has(name)).map(([, pod]) => pod!);
          const refused = () => side.recording.events.filter((e) => e.type === 'ADDED' && e.object.reason === 'FailedCreate').length;
          await waitFor('a replacement pod or its refusal', async () => made().length > 0 || refused() > 0, 15_000, 250).catch(() => undefined);
          const uninjected = made().filter((p) => !p.metadata?.annotations?.['leaderhook.io/injected']).length;
          return `replacement pods while the webhook was down: ${made().length - uninjected} injected, ${uninjected} uninjected; ${refused()} FailedCreate`;
        });
      } finally {
        await scaleWebhook(2);
      }
    } finally {
      await dispose(sides);
    }
  };
}

/** Until a pod of the new ReplicaSet leads and the rollout is complete, or the timeout. */
function rolloutRestart(operator: OperatorName): TrialRun {
  return async (scenario, trial) => {
    const sides = await deploymentPair(scenario, trial, { operator });
    try {
      const zero = Date.now();
      const oldPods = new Map<TrialSide, Set<string>>();
      for (const side of sides) {
        oldPods.set(side, new Set((await core.listNamespacedPod({ namespace: side.namespace })).items.map((p) => p.metadata!.name!)));
        kubectl(['-n', side.namespace, 'rollout', 'restart', `deployment/${operator}`]);
      }
      return await Promise.all(
        sides.map(async (side) => {
          const done = await waitFor(
            'a pod of the new ReplicaSet to lead, the rollout complete',
            async () => {
              const holder = holderNow(side);
              if (!holder || oldPods.get(side)!.has(holder)) return undefined;
              const d = await apps.readNamespacedDeployment({ name: operator, namespace: side.namespace });
              const complete = d.status?.updatedReplicas === 2 && d.status.replicas === 2 && d.status.availableReplicas === 2;
              return complete && Date.now();
            },
            timeoutMs,
            250,
          ).catch(() => undefined);
          return trialRecord(scenario, trial, side, {
            zero,
            detail: done
              ? `a new pod leads and the rollout is complete ${((done - zero) / 1000).toFixed(0)} s after the restart`
              : 'no new pod led within the timeout',
          });
        }),
      );
    } finally {
      await dispose(sides);
    }
  };
}

/** One side per mode whose leader runs on `node` and standby on another (test/support/node-leaders.ts). */
async function leadersOnNode(scenario: string, trial: number, node: string, operator: OperatorName): Promise<TrialSide[]> {
  const cases = await leadersOn({ after: () => {} }, node, namespacePrefix(scenario, trial, true).replace(/-with$/, ''), [operator]);
  return cases.map((c) => ({ namespace: c.scenario.namespace, withLeaderhook: c.withLeaderhook, operator, recording: c.scenario.recording, leader: c.leader }));
}

/** The node a multi-node scenario puts its fault on: the second (a node that joined; not the control plane's namespace). */
function faultNode(): ClusterNode {
  const reason = fewerNodesThan(3);
  if (reason) throw new Error(reason);
  return clusterNodes()[1]!;
}

function nodeDrain(operator: OperatorName): TrialRun {
  return async (scenario, trial) => {
    const node = faultNode();
    await webhookPodsOn(node.name, 1);
    const sides = await leadersOnNode(scenario, trial, node.name, operator);
    try {
      const zero = Date.now();
      const drained = await drain(node.name);
      if (drained.code !== 0) throw new Error(`kubectl drain ${node.name} exited ${drained.code}: ${drained.lines.map((l) => l.text).join('\n')}`);
      return await Promise.all(
        sides.map(async (side) => {
          const outcome = await followFailover(side.recording, side.operator, side.leader, zero, { timeoutMs, untilOldPodGone: true });
          return trialRecord(scenario, trial, side, {
            zero,
            lockFreedMs: outcome.lockFreedMs,
            freedBy: outcome.freedBy,
            detail: `the drain took ${((drained.endedAt - zero) / 1000).toFixed(1)} s`,
          });
        }),
      );
    } finally {
      uncordon(node.name);
      await dispose(sides);
    }
  };
}

const nodeCutOff: TrialRun = async (scenario, trial) => {
  const node = faultNode();
  const sides = await leadersOnNode(scenario, trial, node.name, 'lfl-operator');
  try {
    const cutAt = Date.now();
    cutOff(node);
    const notReadyAt = await waitFor(`${node.name} to turn NotReady`, async () => (await nodeReadyStatus(node.name)) !== 'True' && Date.now(), 180_000, 500);
    // The standby's hook says why it waits before the remedy (a minute at most: the record says if it did not).
    const heldEvent = (side: TrialSide) =>
      side.recording.events.find(
        (e) => e.object.reason === 'LeaderLockHeld' && e.object.involvedObject?.name !== side.leader && /notReady/.test(e.object.message ?? ''),
      );
    const withHook = sides.find((side) => side.withLeaderhook)!;
    await waitFor("the standby's LeaderLockHeld Event", async () => heldEvent(withHook), 60_000, 500).catch(() => undefined);
    stopNode(node);
    const zero = Date.now();
    kubectl(['taint', 'node', node.name, OUT_OF_SERVICE_TAINT]);
    return await Promise.all(
      sides.map(async (side) => {
        const outcome = await followFailover(side.recording, side.operator, side.leader, zero, {
          timeoutMs: Math.max(timeoutMs, 90_000),
          untilOldPodGone: true,
        });
        const held = heldEvent(side);
        return trialRecord(scenario, trial, side, {
          zero,
          lockFreedMs: outcome.lockFreedMs,
          freedBy: outcome.freedBy,
          detail:
            `NotReady ${((notReadyAt - cutAt) / 1000).toFixed(0)} s after the cut; ` +
            `${held ? `the standby's LeaderLockHeld ${((held.at - notReadyAt) / 1000).toFixed(1)} s after NotReady` : 'no LeaderLockHeld Event'}; ` +
            `lock kept until the taint: ${freedAt(side, cutAt) === undefined || (freedAt(side, cutAt) ?? 0) >= zero ? 'yes' : 'NO'}`,
        });
      }),
    );
  } finally {
    removeOutOfServiceTaint(node.name);
    startStoppedComponents();
    await dispose(sides);
  }
};

const RUNS: Record<string, TrialRun> = {
  'lfl-rollout-restart': rolloutRestart('lfl-operator'),
  'lease-rollout-restart': rolloutRestart('lease-operator'),
  eviction: eviction(false),
  'eviction-pods-delete': eviction(true),
  'crash-restart': crashRestart,
  'lease-crash-restart': leaseCrashRestart,
  'node-not-ready': nodeNotReady,
  'apiserver-restart': apiServerRestart,
  'lfl-node-drain': nodeDrain('lfl-operator'),
  'lease-node-drain': nodeDrain('lease-operator'),
  'node-cut-off': nodeCutOff,
  'webhook-down-enabled': webhookDown('enabled'),
  'webhook-down-required': webhookDown('required'),
};

const CLUSTER_PROCESS_FAULTS = new Set(['node-not-ready', 'apiserver-restart', 'node-cut-off']);
const MULTI_NODE = new Set(['lfl-node-drain', 'lease-node-drain', 'node-cut-off']);

async function main(): Promise<void> {
  const unavailable = clusterProcessFaultsUnavailable();
  const refused = args.scenarios.filter((s) => CLUSTER_PROCESS_FAULTS.has(s));
  if (unavailable && refused.length > 0) throw new Error(`--scenario ${refused.join(', ')}: ${unavailable}`);
  const multiNode = args.scenarios.filter((s) => MULTI_NODE.has(s));
  const fewer = fewerNodesThan(3);
  if (fewer && multiNode.length > 0) {
    // Named, they are what was asked for; by default, the ones this cluster can run.
    if (process.argv.slice(2).some((arg) => arg === '--scenario' || arg.startsWith('--scenario=')))
      throw new Error(`--scenario ${multiNode.join(', ')}: ${fewer}`);
    args.scenarios = args.scenarios.filter((s) => !MULTI_NODE.has(s));
    say(`skipping ${multiNode.join(', ')}: ${fewer}`);
  }
  const run = runRecord('bench:faults', process.argv.slice(2), timeoutMs);
  writeFileSync(out, `${JSON.stringify(run)}\n`);
  say(`recording to ${out}`);
  say('installing leaderhook (deploy/)');
  const uninstall = await installLeaderhook({ debugLog: false });
  try {
    for (const scenario of args.scenarios) {
      const count = args.trialsOf(scenario);
      for (let trial = 1; trial <= count; trial++) {
        for (const record of await RUNS[scenario]!(scenario, trial)) {
          appendFileSync(out, `${JSON.stringify(record)}\n`);
          const newLeader = record.newLeaderMs === undefined ? 'no new leader' : `new leader after ${(record.newLeaderMs / 1000).toFixed(2)} s`;
          say(
            `${scenario} ${record.withLeaderhook ? 'with leaderhook' : 'without'} trial ${trial}/${count}: ${record.outcome} (${newLeader}; freed by ${record.freedBy}; releases ${record.releases.join(',') || 'none'})${record.detail ? `; ${record.detail}` : ''}${record.splitBrain ? `; SPLIT BRAIN ${record.splitBrain} (${record.splitBrainKinds?.join(', ')})` : ''}${record.unobserved ? `; ${record.unobserved} unobserved stretch(es) of the lock's history` : ''}`,
          );
        }
      }
    }
  } finally {
    await uninstall();
  }
  finishRunRecord(out, run);
  if (args.docs) {
    const file = join(args.docs, 'faults.md');
    mkdirSync(args.docs, { recursive: true });
    await writeFaultsReport(parseFaultRecords(readFileSync(out, 'utf8')), file);
    say(`rendered ${file}`);
  }
}

await main();
