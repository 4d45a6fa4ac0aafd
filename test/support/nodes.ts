/**
 * The nodes of the local cluster (test/cluster/up.sh --nodes N): what
 * up.sh wrote to $STATE/nodes.tsv, one line per node. Node 1 shares the
 * control plane's network namespace; node K >= 2 has its own namespace,
 * containerd, kubelet and kube-proxy, recorded under `<component>-<node>`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { broughtOwnCluster, clusterStateDir } from './kube.ts';

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
