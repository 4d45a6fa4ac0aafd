import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { clientApi } from '../check/api.ts';
import { withExecCredential } from '../check/exec-credential.ts';
import { type CheckResult, exitCode, failed, formatJson, formatResult, formatSummary } from '../check/report.ts';
import { runChecks } from '../check/run.ts';
import { errorMessage } from '../error-message.ts';
import { type FlagValues, type ParsedFlags, UsageError } from '../flags.ts';
import { createKubeClient } from '../kube/client.ts';
import { type ClusterConfig, inClusterConfig, kubeconfigConfig } from '../kube/config.ts';
import type { checkFlags } from './flags.ts';

/**
 * The cluster to check, found as kubectl finds it: --kubeconfig (or
 * $KUBECONFIG, whose first existing file counts; kubectl would merge them),
 * else ~/.kube/config, else the service account of the pod this runs in. A
 * user's credential plugin (exec) is run, as kubectl runs it.
 */
export async function clusterConfigFor(values: FlagValues<typeof checkFlags>, env: NodeJS.ProcessEnv = process.env): Promise<ClusterConfig> {
  const context = values.context || undefined;
  const given = values.kubeconfig;
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
 * Where the results go: as text, each line as soon as its check is done (a
 * slow API server shows progress), then the summary; as JSON, one document
 * once all are in.
 */
function reporter(output: FlagValues<typeof checkFlags>['output']): { each: (result: CheckResult) => void; end: (results: readonly CheckResult[]) => void } {
  const print = (text: string) => process.stdout.write(text);
  if (output === 'json') return { each: () => {}, end: (results) => print(formatJson(results)) };
  return { each: (result) => print(`${formatResult(result)}\n`), end: (results) => print(`${formatSummary(results)}\n`) };
}

/**
 * `leaderhook check`: one line per check on stdout, ✓ or ✗ with the remedy,
 * then a summary (or, with --output json, one JSON document); exit 0 when
 * every check passed, 1 otherwise. Reads the cluster with the project's own
 * API client: the image every operator pod pulls carries no other
 * (CONTRIBUTING.md, Dependencies).
 */
export async function runCheckCommand({ values }: ParsedFlags<typeof checkFlags>): Promise<number> {
  const report = reporter(values.output);
  let config: ClusterConfig;
  try {
    config = await clusterConfigFor(values);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const access = failed('cluster access', errorMessage(error), 'check --kubeconfig and --context (kubectl config view --minify shows what they select)');
    report.each(access);
    report.end([access]);
    return 1;
  }
  const client = createKubeClient(config);
  const api = clientApi(client, values['request-timeout']);
  try {
    const results = await runChecks(
      api,
      {
        webhookConfiguration: values['webhook-configuration'],
        tlsSecret: values['tls-secret'],
        ...(values.namespace ? { namespace: values.namespace } : {}),
        now: new Date(),
        server: `${config.server.href} (${config.source})`,
      },
      report.each,
    );
    report.end(results);
    return exitCode(results);
  } finally {
    client.close();
  }
}
