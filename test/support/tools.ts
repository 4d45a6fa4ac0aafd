/**
 * helm and kustomize for the chart's tests, built from the Go modules that
 * test/tools pins (test/tools/go-tool.sh) rather than taken from the machine:
 * kubectl, whose kustomize the cluster tests use, exists only once the local
 * cluster is built. helm runs with its own empty config, cache and data
 * directories, so no repository or plugin of the machine's user leaks in.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const repo = path.join(import.meta.dirname, '../..');
export const chartDir = path.join(repo, 'charts/leaderhook');

const built = new Map<string, string>();

/** The path of tool `name`, built on first use (minutes on a cold Go cache), cached in ~/.cache/leaderhook/bin. */
export function goTool(name: 'helm' | 'kustomize'): string {
  let binary = built.get(name);
  if (binary === undefined) {
    try {
      binary = execFileSync('bash', [path.join(repo, 'test/tools/go-tool.sh'), name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    } catch (error) {
      throw new Error(`building ${name} with test/tools/go-tool.sh: ${(error as Error).message}`);
    }
    built.set(name, binary);
  }
  return binary;
}

/** The output of a tool run; on a non-zero exit, an Error carrying its stderr. */
function run(name: 'helm' | 'kustomize', args: string[], env: NodeJS.ProcessEnv = process.env): string {
  try {
    return execFileSync(goTool(name), args, { cwd: repo, encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`${name} ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
  }
}

let helmHome: string | undefined;

export function helm(args: string[]): string {
  helmHome ??= mkdtempSync(path.join(tmpdir(), 'leaderhook-helm-'));
  return run('helm', args, {
    ...process.env,
    HELM_CONFIG_HOME: path.join(helmHome, 'config'),
    HELM_CACHE_HOME: path.join(helmHome, 'cache'),
    HELM_DATA_HOME: path.join(helmHome, 'data'),
  });
}

export function kustomize(args: string[]): string {
  return run('kustomize', args);
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** The objects of a multi-document YAML stream, without empty documents. */
export function parseObjects(yaml: string): KubeObject[] {
  return parseAllDocuments(yaml)
    .map((doc) => doc.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null && typeof o === 'object');
}

/** `Kind namespace/name`, how the tests name an object. */
export function objectKey(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}
