import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { clientApi, messageOf } from '../check/api.ts';
import { withExecCredential } from '../check/exec-credential.ts';
import { exitCode, failed, formatResult, formatSummary } from '../check/report.ts';
import { runChecks } from '../check/run.ts';
import { type FlagValues, UsageError } from '../flags.ts';
import { createKubeClient } from '../kube/client.ts';
import { type ClusterConfig, inClusterConfig, kubeconfigConfig } from '../kube/config.ts';

/**
 * The cluster to check, found as kubectl finds it: --kubeconfig (or
 * $KUBECONFIG, whose first existing file counts; kubectl would merge them),
 * else ~/.kube/config, else the service account of the pod this runs in. A
 * user's credential plugin (exec) is run, as kubectl runs it.
 */
export async function clusterConfigFor(values: FlagValues, env: NodeJS.ProcessEnv = process.env): Promise<ClusterConfig> {
  const context = (values.context as string | undefined) || undefined;
  const given = values.kubeconfig as string | undefined;
  if (given) {
    const file = given.split(delimiter).find((f) => f !== '' && existsSync(f));
    if (!file) throw new UsageError(`--kubeconfig: no file ${given.split(delimiter).join(' or ')}`);
    return withExecCredential(await kubeconfigConfig(file, context));
  }
  const home = join(homedir(), '.kube', 'config');
  if (existsSync(home)) return withExecCredential(await kubeconfigConfig(home, context));
  if (env.KUBERNETES_SERVICE_HOST) return inClusterConfig(env);
  throw new UsageError('no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or create ~/.kube/config');
}

/**
 * `leaderhook check`: one line per check on stdout, ✓ or ✗ with the remedy,
 * then a summary; exit 0 when every check passed, 1 otherwise. Reads the
 * cluster with the project's own API client: the image every operator pod
 * pulls carries no other (README, Dependencies).
 */
export async function runCheckCommand(values: FlagValues): Promise<number> {
  const print = (line: string) => process.stdout.write(`${line}\n`);
  let config: ClusterConfig;
  try {
    config = await clusterConfigFor(values);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    print(formatResult(failed('cluster access', messageOf(error), 'check --kubeconfig and --context (kubectl config view --minify shows what they select)')));
    return 1;
  }
  const client = createKubeClient(config);
  const api = clientApi(client, values['request-timeout'] as number);
  try {
    const results = await runChecks(
      api,
      {
        webhookConfiguration: values['webhook-configuration'] as string,
        tlsSecret: values['tls-secret'] as string,
        ...(values.namespace ? { namespace: values.namespace as string } : {}),
        now: new Date(),
        server: `${config.server.href} (${config.source})`,
      },
      (result) => print(formatResult(result)),
    );
    print(formatSummary(results));
    return exitCode(results);
  } finally {
    client.close();
  }
}
