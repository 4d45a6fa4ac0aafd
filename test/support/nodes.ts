/**
 * The nodes of the local cluster (test/cluster/up.sh --nodes N): what
 * up.sh wrote to $STATE/nodes.tsv, one line per node. Node 1 shares the
 * control plane's network namespace; node K >= 2 has its own namespace,
 * containerd, kubelet and kube-proxy, recorded under `<component>-<node>`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { broughtOwnCluster, clusterStateDir, core, kubeconfigPath } from './kube.ts';
import { kubectl } from './leaderhook.ts';

export type NodeComponent = 'containerd' | 'kubelet' | 'kube-proxy';

export interface ClusterNode {
  /** 1-based, as up.sh counts them. */
  index: number;
  name: string;
  netns: string;
  ip: string;
  containerdAddress: string;
  /** The name the component's PID is recorded under in $STATE/pids. */
  component(name: NodeComponent): string;
}

const nodesFile = join(clusterStateDir, 'nodes.tsv');

/** The local cluster's nodes, node 1 first; [] for a cluster the tests did not start. */
export function clusterNodes(): ClusterNode[] {
  if (broughtOwnCluster) return [];
  if (!existsSync(nodesFile)) throw new Error(`no ${nodesFile}: start the local cluster with npm run cluster:up`);
  return readFileSync(nodesFile, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const [name, netns, ip, containerdAddress] = line.split('\t');
      if (!name || !netns || !ip || !containerdAddress)
        throw new Error(`${nodesFile} line ${i + 1}: expected name, netns, ip, containerd socket: ${JSON.stringify(line)}`);
      const index = i + 1;
      return { index, name, netns, ip, containerdAddress, component: (component) => (index === 1 ? component : `${component}-${name}`) };
    });
}

/** The node named `name`; an error naming the nodes there are otherwise. */
export function clusterNode(name: string): ClusterNode {
  const nodes = clusterNodes();
  const node = nodes.find((n) => n.name === name);
  if (node === undefined) throw new Error(`no node ${name} in the local cluster (nodes: ${nodes.map((n) => n.name).join(', ') || 'none'})`);
  return node;
}

/** Why a test that needs `count` nodes cannot run, or undefined when it can. */
export function fewerNodesThan(count: number): string | undefined {
  if (broughtOwnCluster) return 'needs the local cluster: it stops and cuts off nodes';
  const have = existsSync(nodesFile) ? clusterNodes().length : 0;
  return have >= count ? undefined : `needs ${count} nodes, the local cluster has ${have}: npm run cluster:up -- --nodes ${count}`;
}

/** Marks node `name` unschedulable (kubectl cordon). */
export function cordon(name: string): void {
  kubectl(['cordon', name]);
}

/** Marks node `name` schedulable again (kubectl uncordon). */
export function uncordon(name: string): void {
  kubectl(['uncordon', name]);
}

/**
 * Runs `body` while `name` is the only schedulable node, so that the pods it
 * creates land there; every other node is uncordoned again whatever happens.
 */
export async function onlySchedulable<T>(name: string, body: () => Promise<T>): Promise<T> {
  const others = clusterNodes().filter((node) => node.name !== name);
  for (const node of others) cordon(node.name);
  try {
    return await body();
  } finally {
    for (const node of others) uncordon(node.name);
  }
}

export interface DrainOutcome {
  /** kubectl drain's exit code (0: every pod evicted). */
  code: number | null;
  startedAt: number;
  endedAt: number;
  /** kubectl drain's output lines, each with when it was read. */
  lines: { at: number; text: string }[];
}

/**
 * `kubectl drain` of node `name` as a cluster upgrade does it: cordon, then
 * every pod but DaemonSets' evicted through the Eviction API, which honours
 * PodDisruptionBudgets (kubectl retries a refused eviction every 5 s).
 * kubectl refuses a node with a pod no controller owns; `barePods` evicts
 * those too (--force), for pods something else replaces.
 */
export function drain(name: string, timeoutS = 240, { barePods = false }: { barePods?: boolean } = {}): Promise<DrainOutcome> {
  const startedAt = Date.now();
  const lines: DrainOutcome['lines'] = [];
  const args = ['drain', name, '--ignore-daemonsets', '--delete-emptydir-data', `--timeout=${timeoutS}s`, ...(barePods ? ['--force'] : [])];
  const child = spawn('kubectl', ['--kubeconfig', kubeconfigPath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (text) => lines.push({ at: Date.now(), text }));
  }
  return new Promise((resolve, reject) => {
    child.on('error', (error) => reject(new Error(`kubectl drain ${name}: ${error.message}`, { cause: error })));
    child.on('close', (code) => resolve({ code, startedAt, endedAt: Date.now(), lines }));
  });
}

/** The node pod `name` of `namespace` runs on (undefined: not scheduled). */
export async function nodeOf(namespace: string, name: string): Promise<string | undefined> {
  return (await core.readNamespacedPod({ namespace, name })).spec?.nodeName;
}

/**
 * Cuts node `node` off: the control plane's end of its veth pair goes down,
 * so its kubelet and its pods lose the API server while they keep running,
 * as a node behind a broken switch does. startStoppedComponents (up.sh,
 * test/support/faults.ts) brings the link, its routes and anything stopped
 * back.
 */
export function cutOff(node: ClusterNode): void {
  if (node.index === 1) throw new Error(`node ${node.name} shares the control plane's namespace and cannot be cut off from it`);
  execFileSync('ip', ['link', 'set', `lh-n${node.index}`, 'down'], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * Stops node `node` for real, as a shutdown does: its kubelet (SIGTERM by
 * its recorded PID), then every container of its containerd (SIGKILL), so
 * that no process of its pods runs any more. containerd stays, holding
 * nothing. startStoppedComponents starts the kubelet again.
 */
export function stopNode(node: ClusterNode): void {
  const pid = recordedPid(node.component('kubelet'));
  process.kill(pid, 'SIGTERM');
  const ctr = ['--address', node.containerdAddress, '--namespace', 'k8s.io'];
  for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) execFileSync('sleep', ['0.1']);
  const tasks = execFileSync('ctr', [...ctr, 'tasks', 'ls', '-q'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  for (const task of tasks) execFileSync('ctr', [...ctr, 'tasks', 'kill', '--signal', 'SIGKILL', task], { stdio: 'ignore' });
}

/** The PID the local cluster recorded for `component`, checked to still be that program. */
export function recordedPid(component: string): number {
  const file = join(clusterStateDir, 'pids', `${component}.pid`);
  const pid = Number(readFileSync(file, 'utf8').trim());
  const cmd = readFileSync(join(clusterStateDir, 'pids', `${component}.cmd`), 'utf8').trim();
  const cmdline = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
  if (!cmdline.includes(cmd)) throw new Error(`${file} names PID ${pid}, which is not the running ${component}`);
  return pid;
}

/** The Ready condition's status of node `name` (Unknown once its kubelet stopped posting). */
export async function nodeReadyStatus(name: string): Promise<string | undefined> {
  return (await core.readNode({ name })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

export const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service=nodeshutdown:NoExecute';

/**
 * The containers of pod `namespace/pod` whose processes run on node `node`,
 * as its containerd sees them: what a node cut off from the API server
 * still runs, whatever the API says.
 */
export function runningContainersOf(node: ClusterNode, namespace: string, pod: string): string[] {
  const ctr = ['--address', node.containerdAddress, '--namespace', 'k8s.io'];
  const running = new Set(
    execFileSync('ctr', [...ctr, 'tasks', 'ls'], { encoding: 'utf8' })
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[2] === 'RUNNING')
      .map((fields) => fields[0]),
  );
  const ids = execFileSync(
    'ctr',
    [...ctr, 'containers', 'ls', '-q', `labels."io.kubernetes.pod.name"==${pod},labels."io.kubernetes.pod.namespace"==${namespace}`],
    { encoding: 'utf8' },
  )
    .split('\n')
    .filter((id) => running.has(id));
  return ids.map((id) => {
    const info = JSON.parse(execFileSync('ctr', [...ctr, 'containers', 'info', id], { encoding: 'utf8' })) as { Labels?: Record<string, string> };
    return info.Labels?.['io.kubernetes.container.name'] ?? id;
  });
}

/** Removes the out-of-service taint from node `name`; nothing to do when it has none. */
export function removeOutOfServiceTaint(name: string): void {
  try {
    kubectl(['taint', 'node', name, 'node.kubernetes.io/out-of-service:NoExecute-']);
  } catch (error) {
    if (!/not found/.test((error as Error).message)) throw error;
  }
}
