/**
 * The local cluster is isolated, and still an ordinary cluster inside:
 * none of its network namespaces (the control plane's, and each further
 * node's) has a default route or a link to the machine's own namespace,
 * while a pod on every node reaches the API through the `kubernetes`
 * Service with client-go's unmodified in-cluster configuration.
 *
 * Run inside the namespace: test/cluster/in-netns.sh node --test test/integration/isolation.test.ts
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type V1Pod, VersionApi } from '@kubernetes/client-node';
import { broughtOwnCluster, connectTestCluster, core, createTestNamespace, kubeConfig, type TestNamespace } from '../support/kube.ts';
import { waitFor } from '../support/wait.ts';
import { clusterNodes } from '../support/nodes.ts';

connectTestCluster();

const run = promisify(execFile);
const netns = process.env.LEADERHOOK_NETNS ?? 'leaderhook';
const kubegetImage = process.env.LEADERHOOK_KUBEGET_IMAGE ?? 'leaderhook.local/kubeget:1';

interface Link {
  ifname: string;
  link?: string;
  link_netnsid?: number;
  master?: string;
  linkinfo?: { info_kind?: string };
}

/**
 * A handle on the machine's own network namespace, the one the tests were
 * started from: this process's if it runs outside the cluster's namespace,
 * else that of its nearest ancestor outside it. (PID 1's would be the
 * textbook choice, but a sandboxed machine may deny even root access to it.)
 */
async function machineNetns(): Promise<string> {
  const cluster = (await stat(`/run/netns/${netns}`)).ino;
  let pid = process.pid;
  while (pid > 1) {
    if ((await stat(`/proc/${pid}/ns/net`)).ino !== cluster) return `/proc/${pid}/ns/net`;
    // Field 4 of /proc/PID/stat, after the parenthesised command name, is the parent.
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ');
    pid = Number(fields?.[1]);
  }
  return '/proc/1/ns/net';
}

/** `ip -j ARGS` in one of the cluster's namespaces, or in the machine's own. */
async function ipJson<T>(where: string, ...args: string[]): Promise<T> {
  const command = where !== 'machine' ? ['ip', '-n', where, '-j', ...args] : ['nsenter', `--net=${await machineNetns()}`, 'ip', '-j', ...args];
  const { stdout } = await run(command[0]!, command.slice(1));
  return JSON.parse(stdout || '[]') as T;
}

const nodes = broughtOwnCluster ? [] : clusterNodes();
const clusterNamespaces = nodes.map((node) => node.netns);

describe('network namespaces of the local cluster', { skip: broughtOwnCluster && 'LEADERHOOK_KUBECONFIG names a cluster this project did not start' }, () => {
  test("are namespaces of their own, not the machine's", async () => {
    const machine = (await stat(await machineNetns())).ino;
    for (const name of clusterNamespaces) assert.notEqual((await stat(`/run/netns/${name}`)).ino, machine, name);
  });

  test('have no default route, so nothing can be routed out', async () => {
    for (const name of clusterNamespaces) {
      for (const family of ['-4', '-6']) {
        const { stdout } = await run('ip', ['-n', name, family, 'route', 'show', 'default']);
        assert.equal(stdout.trim(), '', `ip -n ${name} ${family} route show default`);
      }
      // A route lookup only, no packet is sent: an outside address is unreachable.
      await assert.rejects(run('ip', ['-n', name, 'route', 'get', '192.0.2.1']), /Network is unreachable/, name);
    }
  });

  test("share no link with the machine's namespace; nodes are joined only to the control plane's", async () => {
    const links = await ipJson<Link[]>(netns, '-d', 'link', 'show');
    const node = links.find((link) => link.ifname === 'lh-node');
    assert.ok(node, `the node's veth lh-node exists in ${netns}: ${links.map((l) => l.ifname).join(', ')}`);
    // The first node's pair has both ends here: its peer is named, with no netnsid.
    assert.equal(node.link, 'lh-peer');
    assert.equal(node.link_netnsid, undefined);
    // The ids the control plane's namespace knows the further nodes' namespaces by.
    const ids = await ipJson<{ nsid: number; name?: string }[]>(netns, 'netns', 'list-id');
    for (const link of links) {
      if (link.link_netnsid === undefined) continue;
      assert.equal(link.linkinfo?.info_kind, 'veth', `${link.ifname} reaches into another namespace`);
      const into = ids.find((id) => id.nsid === link.link_netnsid)?.name;
      // A further node's pair (lh-nK, into that node's namespace) or a pod's veth.
      const further = nodes.find((n) => n.index > 1 && `lh-n${n.index}` === link.ifname);
      if (further) assert.equal(into, further.netns, `${link.ifname} leads into ${into ?? 'an unnamed namespace'}, not ${further.netns}`);
      else assert.equal(link.master, 'cni0', `${link.ifname} reaches into another namespace but is no pod's veth`);
    }
    for (const further of nodes.filter((n) => n.index > 1)) {
      const nodeLinks = await ipJson<Link[]>(further.netns, '-d', 'link', 'show');
      const nodeIds = await ipJson<{ nsid: number; name?: string }[]>(further.netns, 'netns', 'list-id');
      for (const link of nodeLinks) {
        if (link.link_netnsid === undefined) continue;
        const into = nodeIds.find((id) => id.nsid === link.link_netnsid)?.name;
        if (link.ifname === 'lh-eth') assert.equal(into, netns, `${further.name}'s lh-eth leads into ${into}, not ${netns}`);
        else assert.equal(link.master, 'cni0', `${further.name}: ${link.ifname} reaches into another namespace but is no pod's veth`);
      }
    }

    const rootLinks = await ipJson<Link[]>('machine', '-d', 'link', 'show');
    const rootNames = rootLinks.map((link) => link.ifname);
    for (const name of ['lh-node', 'lh-peer', 'lh-eth', 'cni0', ...nodes.map((n) => `lh-n${n.index}`)]) {
      assert.ok(!rootNames.includes(name), `${name} appears in the machine's namespace`);
    }
    // A veth pair across into the machine's namespace would give a cluster
    // namespace an id there, named after its /run/netns entry.
    const machineIds = await ipJson<{ nsid: number; name?: string }[]>('machine', 'netns', 'list-id');
    const clusterIds = machineIds.filter((id) => id.name !== undefined && clusterNamespaces.includes(id.name)).map((id) => id.nsid);
    const crossing = rootLinks.filter((link) => link.link_netnsid !== undefined && clusterIds.includes(link.link_netnsid));
    assert.deepEqual(
      crossing.map((link) => link.ifname),
      [],
    );
  });
});

describe('a pod on every node of the cluster', () => {
  let namespace: TestNamespace;
  before(async () => {
    namespace = await createTestNamespace('isolation', { 'pod-security.kubernetes.io/enforce': 'restricted' });
  });
  after(async () => {
    await namespace?.cleanup();
  });

  test('reaches the API through the kubernetes Service with the unmodified in-cluster configuration', async () => {
    for (const node of nodes.length > 0 ? nodes.map((n) => n.name) : [undefined]) await kubegetOn(node);
  });

  async function kubegetOn(nodeName: string | undefined): Promise<void> {
    const name = nodeName ? `kubeget-${nodeName}` : 'kubeget';
    const pod: V1Pod = {
      metadata: { name },
      spec: {
        nodeName,
        restartPolicy: 'Never',
        securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'kubeget',
            image: kubegetImage,
            imagePullPolicy: 'Never',
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        ],
      },
    };
    await core.createNamespacedPod({ namespace: namespace.name, body: pod });
    const done = await waitFor(
      `pod ${name} to finish`,
      async () => {
        const current = await core.readNamespacedPod({ name, namespace: namespace.name });
        const phase = current.status?.phase;
        return phase === 'Succeeded' || phase === 'Failed' ? current : undefined;
      },
      90_000,
    );
    const log = await core.readNamespacedPodLog({ name, namespace: namespace.name, container: 'kubeget' });
    assert.equal(done.status?.phase, 'Succeeded', `${name} failed: ${log}`);

    const service = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const reply = JSON.parse(log.trim()) as { host: string; gitVersion: string };
    assert.equal(reply.host, `https://${service.spec?.clusterIP}:443`, 'in-cluster configuration points at the kubernetes Service');
    const served = await kubeConfig.makeApiClient(VersionApi).getCode();
    assert.equal(reply.gitVersion, served.gitVersion, `${name} saw the same API server`);
  }
});
