/**
 * The fault schedule of the soak (`npm run bench:soak -- --duration 2h`):
 * which fault hits which operator when, drawn from a seed so that a soak that
 * found something can be run again with the same faults at the same moments.
 * Pure: the driver applies the schedule, this file only decides it.
 */

/** Where a fault lands: one operator's namespace, or the whole cluster (every namespace at once). */
export type FaultScope = 'target' | 'cluster';

export interface SoakFaultText {
  /** What is done, for the reader of docs/soak.md. */
  description: string;
  scope: FaultScope;
  /** Only a namespace with leaderhook has a hook to kill. */
  needsLeaderhook?: true;
  /**
   * The kind of container the kubelet restarts after this fault: such a
   * restart is the soak's doing, not a finding. A target fault restarts that
   * container of the pod it hit, once; a cluster-wide one may restart any
   * number of them anywhere (an operator that exits when it loses the API server).
   */
  restarts?: 'operator' | 'hook';
}

/** Every fault the soak knows, in report order. */
export const SOAK_FAULTS = {
  'delete-leader': { description: 'leader pod deleted', scope: 'target' },
  'rollout-restart': { description: 'rollout restart', scope: 'target' },
  'crash-operator': { description: "leader's operator container crashed", scope: 'target', restarts: 'operator' },
  evict: { description: 'leader pod evicted', scope: 'target' },
  'kill-hook': { description: "leader's release hook killed (SIGKILL)", scope: 'target', needsLeaderhook: true, restarts: 'hook' },
  'delete-webhook-replica': { description: 'webhook replica deleted', scope: 'cluster' },
  'restart-apiserver': { description: 'API server restarted', scope: 'cluster', restarts: 'operator' },
  'drain-node': { description: 'node drained, then uncordoned', scope: 'cluster' },
} as const satisfies Record<string, SoakFaultText>;

export type SoakFault = keyof typeof SOAK_FAULTS;

export const isSoakFault = (name: string): name is SoakFault => Object.hasOwn(SOAK_FAULTS, name);

/** What the soak knows of a fault named in a record, which may be one it does not know. */
export const soakFaultText = (name: string): SoakFaultText | undefined => (isSoakFault(name) ? SOAK_FAULTS[name] : undefined);

/** The target of a cluster-wide fault in the schedule. */
export const CLUSTER_TARGET = 'cluster';

export interface SoakTarget {
  /** One operator per namespace: the namespace names the target. */
  namespace: string;
  withLeaderhook: boolean;
  /**
   * Target faults that mean nothing for its operator (a rollout restart of
   * pods no controller rolls out): never drawn for it. A target without
   * any is drawn as it was before targets could have them, so a seed's
   * schedule over such targets stays the same.
   */
  excludedFaults?: readonly SoakFault[];
}

/** Whether `fault` may land on `target`: its hook, where the fault needs one, and its operator's meaning for it. */
const lands = (fault: SoakFault, target: SoakTarget): boolean =>
  (target.withLeaderhook || !(SOAK_FAULTS[fault] as SoakFaultText).needsLeaderhook) && !target.excludedFaults?.includes(fault);

export interface SoakPlanInput {
  durationMs: number;
  /** The mean of the exponential gaps between faults: faults come as a Poisson process, at no rhythm an operator could fall into step with. */
  meanIntervalMs: number;
  faults: readonly { fault: SoakFault; weight: number }[];
  targets: readonly SoakTarget[];
  /** A 32-bit integer. */
  seed: number;
  /** The least time between two faults on the same namespace, so that the second never lands on a failover still under way. */
  targetCooldownMs: number;
  /** The least time between two cluster-wide faults: the webhook and the API server back before either goes again. */
  clusterCooldownMs: number;
  /** No fault in the last `settleMs` of the run, so the last checks see every operator settled. */
  settleMs?: number;
}

export interface PlannedFault {
  atMs: number;
  fault: SoakFault;
  /** A namespace, or CLUSTER_TARGET. */
  target: string;
}

/** mulberry32: a 32-bit seeded generator, uniform in [0, 1); plenty for drawing faults, and a few lines with no dependency. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const nonNegative = (value: number) => Number.isFinite(value) && value >= 0;

function validate(input: SoakPlanInput): void {
  const { durationMs, meanIntervalMs, faults, targets, seed, targetCooldownMs, clusterCooldownMs, settleMs = 0 } = input;
  if (!(Number.isFinite(durationMs) && durationMs > 0)) throw new Error(`the soak's duration must be a positive number of ms, got ${durationMs}`);
  if (!(Number.isFinite(meanIntervalMs) && meanIntervalMs > 0))
    throw new Error(`the mean interval between faults must be a positive number of ms, got ${meanIntervalMs}`);
  if (!Number.isInteger(seed) || seed < -(2 ** 31) || seed >= 2 ** 32) throw new Error(`the seed must be a 32-bit integer, got ${seed}`);
  for (const [name, value] of Object.entries({ targetCooldownMs, clusterCooldownMs, settleMs })) {
    if (!nonNegative(value)) throw new Error(`${name} must be a number of ms of at least 0, got ${value}`);
  }
  if (settleMs >= durationMs) throw new Error(`settleMs (${settleMs}) leaves no time for faults in a soak of ${durationMs} ms`);
  if (faults.length === 0) throw new Error('the soak needs at least one fault kind');
  const seen = new Set<string>();
  for (const { fault, weight } of faults) {
    if (!isSoakFault(fault)) throw new Error(`unknown fault kind "${fault}"; the soak knows ${Object.keys(SOAK_FAULTS).join(', ')}`);
    if (seen.has(fault)) throw new Error(`fault kind "${fault}" is given twice`);
    seen.add(fault);
    if (!nonNegative(weight)) throw new Error(`the weight of "${fault}" must be a number of at least 0, got ${weight}`);
  }
  const drawn = faults.filter(({ weight }) => weight > 0);
  if (drawn.length === 0) throw new Error('every fault kind has weight 0: nothing to schedule');
  const namespaces = new Set<string>();
  for (const { namespace } of targets) {
    if (namespace === '' || namespace === CLUSTER_TARGET) throw new Error(`"${namespace}" cannot name a target namespace`);
    if (namespaces.has(namespace)) throw new Error(`target namespace "${namespace}" is given twice`);
    namespaces.add(namespace);
  }
  for (const { fault } of drawn) {
    const text: SoakFaultText = SOAK_FAULTS[fault];
    if (text.scope === 'target' && targets.length === 0) throw new Error(`"${fault}" hits a namespace, and no target namespace is given`);
    if (text.needsLeaderhook && !targets.some((target) => target.withLeaderhook))
      throw new Error(`"${fault}" needs a namespace with leaderhook, and no target has it`);
    if (text.scope === 'target' && !targets.some((target) => lands(fault, target)))
      throw new Error(`"${fault}" means nothing for the operator of any target namespace: give it weight 0`);
  }
}

/** The kind whose share of the total weight `pick` falls in; the last one for a pick at the very top, where rounding can leave it. */
function drawWeighted(kinds: readonly { fault: SoakFault; weight: number }[], pick: number): SoakFault {
  let below = 0;
  for (const { fault, weight } of kinds) {
    below += weight;
    if (pick < below) return fault;
  }
  return kinds.at(-1)!.fault;
}

/**
 * The schedule, in time order, every fault before `durationMs - settleMs`.
 * A fault drawn where its cooldown forbids it is dropped, not delayed: a
 * delayed one would bunch up with the next at the end of every cooldown.
 */
export function planSoak(input: SoakPlanInput): PlannedFault[] {
  validate(input);
  const random = mulberry32(input.seed);
  const kinds = input.faults.filter(({ weight }) => weight > 0);
  const totalWeight = kinds.reduce((sum, { weight }) => sum + weight, 0);
  const end = input.durationMs - (input.settleMs ?? 0);
  const lastAt = new Map<string, number>();
  const coolingDown = (target: string, atMs: number, cooldownMs: number) => {
    const last = lastAt.get(target);
    return last !== undefined && atMs - last < cooldownMs;
  };
  const plan: PlannedFault[] = [];
  for (let t = 0; ; ) {
    t += -input.meanIntervalMs * Math.log(1 - random());
    const atMs = Math.round(t);
    if (atMs >= end) return plan;
    const fault = drawWeighted(kinds, random() * totalWeight);
    const text: SoakFaultText = SOAK_FAULTS[fault];
    const choice = random();
    if (text.scope === 'cluster') {
      if (coolingDown(CLUSTER_TARGET, atMs, input.clusterCooldownMs)) continue;
      lastAt.set(CLUSTER_TARGET, atMs);
      plan.push({ atMs, fault, target: CLUSTER_TARGET });
      continue;
    }
    const eligible = input.targets.filter((target) => lands(fault, target) && !coolingDown(target.namespace, atMs, input.targetCooldownMs));
    if (eligible.length === 0) continue;
    const { namespace } = eligible[Math.floor(choice * eligible.length)]!;
    lastAt.set(namespace, atMs);
    plan.push({ atMs, fault, target: namespace });
  }
}

/** `--duration 2h`, `90m`, `1h30m`, `45s` in ms. */
export function parseDurationMs(text: string): number {
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim());
  const [hours = '0', minutes = '0', secs = '0'] = match?.slice(1) ?? [];
  const ms = ((Number(hours) * 60 + Number(minutes)) * 60 + Number(secs)) * 1000;
  if (!match || text.trim() === '' || ms === 0) throw new Error(`a duration is hours, minutes and seconds, like 2h, 90m or 1h30m; got "${text}"`);
  return ms;
}

/** A node of the cluster, as the drain fault weighs it. */
export interface DrainCandidate {
  name: string;
  /** Cordoned already (by someone else): draining it again hits nothing new. */
  unschedulable: boolean;
}

/**
 * The node the drain fault takes: of the schedulable nodes, the one the most
 * leaders run on (ties to the first by name), as the node an upgrade drains
 * that hurts the most; undefined where draining would leave no schedulable
 * node for the evicted pods to move to.
 */
export function nodeToDrain(nodes: readonly DrainCandidate[], leaderNodes: readonly (string | undefined)[]): string | undefined {
  const schedulable = nodes.filter((node) => !node.unschedulable).map((node) => node.name);
  if (schedulable.length < 2) return undefined;
  const leaders = (name: string) => leadersOn(name, leaderNodes);
  return schedulable.sort((a, b) => leaders(b) - leaders(a) || (a < b ? -1 : a > b ? 1 : 0))[0];
}

/** How many of the namespaces' leaders run on node `name`. */
export function leadersOn(name: string, leaderNodes: readonly (string | undefined)[]): number {
  return leaderNodes.filter((node) => node === name).length;
}
