/**
 * A kubeconfig with a credential plugin, as managed clusters write them: the
 * plugin runs with KUBERNETES_EXEC_INFO and its env, from the kubeconfig's
 * directory for a relative path, and its token is what the client sends.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { withExecCredential } from '../../../src/check/exec-credential.ts';
import { kubeconfigConfig } from '../../../src/kube/config.ts';

/** A plugin that echoes what it was given inside the token, so the test can read it back. */
const PLUGIN = `
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
if (process.env.PLUGIN_FAIL) process.exit(3);
const status = process.env.PLUGIN_CERT
  ? { clientCertificateData: 'CERT', clientKeyData: 'KEY' }
  : { token: [info.kind, info.spec.interactive, info.spec.cluster?.server, process.env.PLUGIN_GREETING, process.argv[2]].join('|') };
process.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status }));
`;

function kubeconfig(exec: Record<string, unknown>): string {
  return JSON.stringify({
    'current-context': 'c',
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
    clusters: [{ name: 'k', cluster: { server: 'https://api.example.test:6443' } }],
    users: [{ name: 'u', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', ...exec } } }],
  });
}

describe('kubeconfig credential plugins (exec)', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'leaderhook-exec-'));
    await writeFile(join(dir, 'plugin.mjs'), PLUGIN);
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  async function configWith(exec: Record<string, unknown>) {
    const file = join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
    await writeFile(file, kubeconfig(exec));
    return withExecCredential(await kubeconfigConfig(file));
  }

  it('runs the plugin with its args, env and KUBERNETES_EXEC_INFO, and uses its token', async () => {
    const config = await configWith({
      command: process.execPath,
      args: [join(dir, 'plugin.mjs'), 'arg1'],
      env: [{ name: 'PLUGIN_GREETING', value: 'hello' }],
      provideClusterInfo: true,
    });
    assert.equal(config.token?.get(), 'ExecCredential|false|https://api.example.test:6443|hello|arg1');
  });

  it('leaves out the cluster unless provideClusterInfo, and takes a client certificate', async () => {
    const plain = await configWith({ command: process.execPath, args: [join(dir, 'plugin.mjs')] });
    assert.equal(plain.token?.get(), 'ExecCredential|false|||');
    const cert = await configWith({ command: process.execPath, args: [join(dir, 'plugin.mjs')], env: [{ name: 'PLUGIN_CERT', value: '1' }] });
    assert.equal(cert.cert?.toString(), 'CERT');
    assert.equal(cert.key?.toString(), 'KEY');
    assert.equal(cert.token, undefined);
  });

  it('names the plugin when it is missing (with its install hint) or fails', async () => {
    await assert.rejects(
      configWith({ command: './no-such-plugin', installHint: 'install it with your cloud CLI' }),
      new RegExp(`credential plugin ${dir}/no-such-plugin .*: ENOENT: install it with your cloud CLI`),
    );
    await assert.rejects(
      configWith({ command: process.execPath, args: [join(dir, 'plugin.mjs')], env: [{ name: 'PLUGIN_FAIL', value: '1' }] }),
      /credential plugin .* exited with 3/,
    );
  });

  it('a kubeconfig without a plugin is left as it is', async () => {
    const file = join(dir, 'token-kubeconfig');
    await writeFile(
      file,
      JSON.stringify({
        'current-context': 'c',
        contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
        clusters: [{ name: 'k', cluster: { server: 'https://api.example.test:6443' } }],
        users: [{ name: 'u', user: { token: 'static' } }],
      }),
    );
    const config = await kubeconfigConfig(file);
    assert.equal(await withExecCredential(config), config);
  });
});
