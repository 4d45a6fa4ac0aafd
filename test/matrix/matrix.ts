/**
 * `npm run test:matrix`: per Kubernetes version, a fresh single-node local
 * cluster of that version (test/cluster, built from the official Go modules
 * if it is not cached), the core end-to-end set, pod start with and without
 * the hook, and bench:failover's kubelet-bound scenarios; then the cluster
 * goes down. Each version's record replaces docs/compatibility/v1.MINOR.json
 * (beside its failover record), and docs/compatibility.md and the README's
 * requirement block are rendered again from every record there.
 *
 *   npm run test:matrix -- [--versions 1.30,1.34,1.37] [--trials 20] [--pods 20]
 *   npm run test:matrix -- --render     (render only, from the records)
 *
 * Every version runs in a cluster of its own (its own state directory and
 * network namespace), so it never touches the default cluster of
 * `npm run cluster:up`. Runs from the machine's own namespace, as root, like
 * up.sh; the tests and benchmarks enter the cluster's through in-netns.sh.
 * A step's output goes to a log file; a failed step prints its last lines.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  byMinor,
  CORE_TESTS,
  failoverFileOf,
  KUBELET_UPGRADE_TEST,
  MATRIX_PODS_DEFAULT,
  MATRIX_SCENARIOS,
  MATRIX_TRIALS_DEFAULT,
  type PodStartSamples,
  readVersionRuns,
  recordFileOf,
  renderCompatibility,
  renderReadmeBlock,
  type StepResult,
  type TestResult,
  type VersionResult,
} from './compatibility.ts';
import { say } from '../support/progress.ts';

const repo = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const recordsDir = join(repo, 'docs/compatibility');

const usage = `usage: npm run test:matrix -- [--versions 1.30,1.34,1.37] [--trials ${MATRIX_TRIALS_DEFAULT}] [--pods ${MATRIX_PODS_DEFAULT}]
       npm run test:matrix -- --render

  --versions LIST  Kubernetes minors, comma-separated (default: every version test/cluster/build.sh --list names);
                   one not built yet is built first (20-40 minutes on 2 cores)
  --trials N       bench:failover trials per scenario and mode (${MATRIX_SCENARIOS.join(', ')}; default ${MATRIX_TRIALS_DEFAULT})
  --pods N         pods of each kind for the pod-start benchmark (default ${MATRIX_PODS_DEFAULT})
  --render         only render docs/compatibility.md and the README's block from docs/compatibility/
`;

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive whole number, got ${value}`);
  return n;
}

/** The versions build.sh supports, "1.30" → "v1.30.14". */
async function supportedVersions(): Promise<Map<string, string>> {
  const out = await capture('bash', [join(repo, 'test/cluster/build.sh'), '--list'], process.env);
  return new Map(
    out
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/) as [string, string]),
  );
}

function capture(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited ${code}`))));
  });
}

/**
 * The newest minor below MINOR whose binaries are built (cached), at most
 * three minors older (the kubelet's skew allowed): the kubelet the cluster of
 * MINOR starts with for the upgrade-in-place test. Building one costs 20-40
 * minutes, so the matrix takes what is there and says what it took.
 */
async function newestBuiltBelow(minor: string, supported: string[]): Promise<string | undefined> {
  const older = supported
    .filter((other) => byMinor(other, minor) < 0 && byMinor(minor, other) <= 3)
    .sort(byMinor)
    .reverse();
  for (const other of older) {
    const bindir = (await capture('bash', [join(repo, 'test/cluster/build.sh'), '--version', other, '--print-bindir'], process.env)).trim();
    if (existsSync(join(bindir, 'kubelet'))) return other;
  }
  return undefined;
}

/** The step running now, and its version's cluster, so that an interrupt ends both. */
let running: { pid: number } | undefined;
let clusterEnv: NodeJS.ProcessEnv | undefined;

/** SIGTERM to a step's process group, SIGKILL to whatever of it still runs 10 s later. */
function endGroup(pid: number): void {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-pid, name);
    } catch {
      // the group is gone
    }
  };
  signal('SIGTERM');
  setTimeout(() => signal('SIGKILL'), 10_000).unref();
}

/**
 * Runs one step in a process group of its own, its output to LOG; ends the
 * group after TIMEOUT. Resolves with the step's result, never rejects.
 */
function runStep(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, log: string, timeoutMs: number): Promise<StepResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const out = createWriteStream(log);
    const child = spawn(command, args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running = { pid: child.pid! };
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      endGroup(child.pid!);
    }, timeoutMs);
    const finish = (code: number | null, error?: Error) => {
      clearTimeout(timer);
      running = undefined;
      out.end(() => {
        const seconds = Math.round((Date.now() - started) / 1000);
        if (code === 0 && !error) return resolve({ name, ok: true, seconds });
        const lastLine =
          readFileSync(log, 'utf8')
            .split('\n')
            .filter((line) => line.trim() !== '')
            .at(-1) ?? '';
        const why = error ? error.message : timedOut ? `ended after ${timeoutMs / 60_000} min` : `exit ${code}`;
        resolve({ name, ok: false, seconds, detail: `${why}: ${lastLine.slice(0, 200)}` });
      });
    };
    child.on('error', (error) => finish(null, error));
    child.on('close', (code) => finish(code));
  });
}

function tail(log: string, lines = 25): string {
  return readFileSync(log, 'utf8').split('\n').slice(-lines).join('\n');
}

interface MatrixOptions {
  trials: number;
  pods: number;
  command: string;
}

/**
 * One version's run. `olderKubelet`: an older minor that is built; the
 * cluster then comes up with kubelets of that minor, the kubelet-upgrade test
 * upgrades them in place, and the rest runs on the version's own kubelet.
 */
async function runVersion(
  minor: string,
  moduleVersion: string,
  olderKubelet: string | undefined,
  options: MatrixOptions,
  logDir: string,
): Promise<VersionResult> {
  const dir = join(logDir, `v${minor}`);
  mkdirSync(dir, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LEADERHOOK_KUBE_VERSION: minor,
    LEADERHOOK_CLUSTER_DIR: join(homedir(), '.cache/leaderhook/matrix', `v${minor}`),
    LEADERHOOK_NETNS: `lhm${minor.replace('.', '')}`,
  };
  const node = process.execPath;
  const inNetns = (args: string[]) => ['bash', [join(repo, 'test/cluster/in-netns.sh'), ...args]] as const;
  const result: VersionResult = {
    kind: 'kubernetes-version',
    minor,
    version: moduleVersion,
    command: options.command,
    startedAt: new Date().toISOString(),
    finishedAt: '',
    machine: `${cpus().length} cores; a fresh single-node cluster of test/cluster`,
    steps: [],
    tests: [],
  };
  clusterEnv = env;
  const step = async (name: string, command: string, args: readonly string[], timeoutMinutes: number, extraEnv: NodeJS.ProcessEnv = {}): Promise<boolean> => {
    const log = join(dir, `${name.replace(/[^a-z0-9.-]+/gi, '_')}.log`);
    say(`${minor}: ${name} ...`);
    const outcome = await runStep(name, command, [...args], { ...env, ...extraEnv }, log, timeoutMinutes * 60_000);
    result.steps.push(outcome);
    say(`${minor}: ${name} ${outcome.ok ? 'ok' : 'FAILED'} in ${outcome.seconds} s${outcome.ok ? '' : ` (${outcome.detail}); log ${log}:\n${tail(log)}`}`);
    return outcome.ok;
  };

  const clusterUp = () =>
    olderKubelet
      ? step(`cluster up, kubelet ${olderKubelet}`, 'bash', [join(repo, 'test/cluster/up.sh')], 20, { LEADERHOOK_KUBELET_VERSION: olderKubelet })
      : step('cluster up', 'bash', [join(repo, 'test/cluster/up.sh')], 20);
  const ready =
    (await step('build', 'bash', [join(repo, 'test/cluster/build.sh'), '--version', minor], 90)) &&
    (await step('fresh state', 'bash', [join(repo, 'test/cluster/down.sh'), '--purge'], 5)) &&
    (await clusterUp()) &&
    (await step('images', 'bash', ['-c', 'bash test/operators/build.sh && bash scripts/build-local-image.sh'], 30));
  if (ready) {
    try {
      const [command, args] = inNetns(['kubectl', 'version', '-o', 'json']);
      const server = JSON.parse(await capture(command, [...args], env)) as { serverVersion?: { gitVersion?: string } };
      result.version = server.serverVersion?.gitVersion ?? moduleVersion;
    } catch (error) {
      say(`${minor}: could not read the API server's version (${(error as Error).message}); recording ${moduleVersion}`);
    }
    const testFiles = CORE_TESTS.map((core) => core.file).filter((file) => file !== KUBELET_UPGRADE_TEST || olderKubelet);
    for (const file of testFiles) {
      const results = join(dir, `${file.replace(/\W+/g, '_')}.results.jsonl`);
      const [command, args] = inNetns([
        node,
        '--test',
        '--test-concurrency=1',
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${join(repo, 'test/matrix/reporter.ts')}`,
        `--test-reporter-destination=${results}`,
        file,
      ]);
      await step(file, command, args, 20);
      if (existsSync(results)) {
        result.tests.push(
          ...readFileSync(results, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as TestResult),
        );
      }
      // Whatever the upgrade test did, the rest runs on this version's own kubelet.
      if (file === KUBELET_UPGRADE_TEST) await step(`kubelet ${minor}`, 'bash', [join(repo, 'test/cluster/up.sh')], 10);
    }
    const podStartJson = join(dir, 'pod-start.json');
    const [podCommand, podArgs] = inNetns([node, 'test/bench/pod-start.bench.ts', '--pods', String(options.pods), '--json', podStartJson]);
    if (await step('pod-start', podCommand, podArgs, 30)) result.podStart = JSON.parse(readFileSync(podStartJson, 'utf8')) as PodStartSamples;
    const failoverOut = join(dir, failoverFileOf(minor));
    const [failCommand, failArgs] = inNetns([
      node,
      'test/bench/failover.bench.ts',
      '--trials',
      String(options.trials),
      ...MATRIX_SCENARIOS.flatMap((scenario) => ['--scenario', scenario]),
      '--out',
      failoverOut,
    ]);
    await step('bench:failover', failCommand, failArgs, 20 + options.trials * 2);
    // A failover record that came to an end holds its run line and trials: keep what it measured even if the step failed late.
    if (existsSync(failoverOut) && readFileSync(failoverOut, 'utf8').includes('"kind":"trial"')) result.failoverRecord = failoverFileOf(minor);
    if (result.failoverRecord) copyFileSync(failoverOut, join(recordsDir, failoverFileOf(minor)));
  }
  await step('cluster down', 'bash', [join(repo, 'test/cluster/down.sh')], 5);
  clusterEnv = undefined;
  result.finishedAt = new Date().toISOString();
  return result;
}

function render(): void {
  const runs = readVersionRuns(recordsDir);
  writeFileSync(join(repo, 'docs/compatibility.md'), renderCompatibility(runs));
  const readmePath = join(repo, 'README.md');
  writeFileSync(readmePath, renderReadmeBlock(readFileSync(readmePath, 'utf8'), runs));
  say(`rendered docs/compatibility.md and the README's requirement block from ${runs.length} version record(s)`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      versions: { type: 'string' },
      trials: { type: 'string', default: String(MATRIX_TRIALS_DEFAULT) },
      pods: { type: 'string', default: String(MATRIX_PODS_DEFAULT) },
      render: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    return;
  }
  if (values.render) return render();
  const trials = positive('trials', values.trials);
  const pods = positive('pods', values.pods);
  const supported = await supportedVersions();
  const versions = values.versions === undefined ? [...supported.keys()] : values.versions.split(',').map((v) => v.trim().replace(/^v/, ''));
  for (const minor of versions) {
    if (!supported.has(minor))
      throw new Error(`--versions: ${minor || '(empty)'} is not a version test/cluster/build.sh supports: ${[...supported.keys()].join(', ')}`);
  }
  if (process.getuid?.() !== 0) throw new Error('test:matrix brings up clusters as up.sh does: run it as root');
  const command = `npm run test:matrix -- --versions ${versions.join(',')} --trials ${trials} --pods ${pods}`;
  const logDir = `/tmp/leaderhook-matrix-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  mkdirSync(recordsDir, { recursive: true });
  say(`${command}: ${versions.length} version(s); logs in ${logDir}`);
  process.once('SIGINT', () => {
    if (running) endGroup(running.pid);
    say('interrupted: the current step is stopped; its cluster goes down (state kept, nothing recorded)');
    if (clusterEnv) spawnSync('bash', [join(repo, 'test/cluster/down.sh')], { cwd: repo, env: clusterEnv, stdio: 'inherit' });
    process.exit(130);
  });
  for (const minor of [...versions].sort(byMinor)) {
    const olderKubelet = await newestBuiltBelow(minor, [...supported.keys()]);
    const result = await runVersion(minor, supported.get(minor)!, olderKubelet, { trials, pods, command }, logDir);
    const failoverRecord = join(recordsDir, failoverFileOf(minor));
    if (!result.failoverRecord) rmSync(failoverRecord, { force: true });
    writeFileSync(join(recordsDir, recordFileOf(minor)), `${JSON.stringify(result, null, 2)}\n`);
    render();
  }
}

main().catch((error: Error) => {
  process.stderr.write(`test:matrix: ${error.message}\n`);
  process.exit(2);
});
