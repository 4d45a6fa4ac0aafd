/**
 * `npm run demo`: leaderhook's value in one command. Brings up the local
 * cluster (building Kubernetes on the first run), builds and imports the
 * images, then runs scripts/demo/scenario.ts inside the cluster's network
 * namespace: two namespaces, one opted in to leaderhook and one not, each
 * with two replicas of a leader-for-life and of a Lease operator; all four
 * leaders deleted at once; what freed each lock and when, side by side.
 * The cluster is left running to look around.
 *
 *   npm run demo [-- --help]
 *
 * Every phase's output goes to a log file under ~/.cache/leaderhook/demo;
 * a failed phase is named with its log. Plain lines when stdout is not a
 * terminal.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const repo = resolve(import.meta.dirname, '..', '..');
const cache = process.env.LEADERHOOK_CACHE ?? join(homedir(), '.cache', 'leaderhook');
const logDir = join(cache, 'demo');
const tty = process.stdout.isTTY === true;

const usage = `usage: npm run demo

Brings up the local Kubernetes cluster (root, Linux; the first run compiles
Kubernetes from the official Go modules: 20-40 minutes on 2 cores, cached in
${cache} afterwards), builds and imports the images, installs leaderhook,
and deletes the leaders of four operators at once: a leader-for-life and a
Lease operator, each in a namespace opted in to leaderhook and in one not.
Prints what freed each lock and when. The cluster keeps running; tear it
down with: npm run cluster:down
`;

const { values } = parseArgs({ options: { help: { type: 'boolean', default: false } } });
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/** A line that a terminal rewrites in place and a log gets once per update. */
function status(text: string): void {
  if (tty) process.stdout.write(`\r\x1b[2K${text}`);
  else process.stdout.write(`${text}\n`);
}

function endStatus(text: string): void {
  if (tty) process.stdout.write(`\r\x1b[2K${text}\n`);
  else process.stdout.write(`${text}\n`);
}

class PhaseFailed extends Error {
  readonly phase: string;
  readonly log: string;
  constructor(phase: string, log: string, detail: string) {
    super(`${phase} failed: ${detail}`);
    this.phase = phase;
    this.log = log;
  }
}

interface Step {
  /** What the user reads. */
  title: string;
  /** File name of its log under logDir. */
  log: string;
  argv: string[];
  /** Prints its stdout to the user too (the scenario's report). */
  showOutput?: boolean;
  /** Extra progress for long steps, polled every few seconds with the time so far. */
  progress?: (elapsedMs: number) => string | undefined;
}

/** Runs one step with its output in its log file; resolves with its duration, or throws PhaseFailed. */
function run(step: Step): Promise<number> {
  const log = join(logDir, step.log);
  const out = createWriteStream(log);
  const started = Date.now();
  return new Promise((resolveStep, reject) => {
    const child = spawn(step.argv[0]!, step.argv.slice(1), { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => {
      out.write(chunk);
      if (step.showOutput) {
        if (tty) process.stdout.write('\r\x1b[2K');
        process.stdout.write(chunk);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => out.write(chunk));
    const tick = setInterval(
      () => {
        const elapsed = Date.now() - started;
        const extra = step.progress?.(elapsed);
        if (!step.showOutput || extra) status(`  ${step.title} … ${seconds(elapsed)}${extra ? ` (${extra})` : ''}`);
      },
      tty ? 1000 : 15_000,
    );
    child.on('error', (error) => {
      clearInterval(tick);
      out.end();
      reject(new PhaseFailed(step.title, log, error.message));
    });
    child.on('exit', (code, signal) => {
      clearInterval(tick);
      out.end();
      const elapsed = Date.now() - started;
      if (code === 0) {
        endStatus(`✓ ${step.title} (${seconds(elapsed)})`);
        resolveStep(elapsed);
      } else {
        endStatus(`✗ ${step.title} (${seconds(elapsed)})`);
        reject(new PhaseFailed(step.title, log, signal ? `killed by ${signal}` : `exit code ${code}`));
      }
    });
  });
}

/**
 * The Kubernetes build's progress from its log (test/cluster/build.sh runs
 * `go mod download -x` and `go build -v`): modules fetched, packages compiled.
 */
function kubernetesBuildProgress(): string | undefined {
  const log = newestBuildLog();
  if (!log) return undefined;
  const text = readFileSync(log, 'utf8');
  const fetched = (text.match(/^# get .*: 200 OK/gm) ?? []).length;
  // go build -v: one import path per line, as each package is compiled.
  const compiled = (text.match(/^[\w.~-]+(\/[\w.~-]+)*$/gm) ?? []).length;
  if (fetched === 0 && compiled === 0) return undefined;
  return `building Kubernetes: ${fetched} module files fetched, ${compiled} packages compiled so far`;
}

function newestBuildLog(): string | undefined {
  const started = Date.now() - 60 * 60 * 1000;
  let newest: { path: string; mtime: number } | undefined;
  if (!existsSync(cache)) return undefined;
  for (const name of readdirSafe(cache)) {
    if (!/^build-[0-9a-f]+\.log$/.test(name)) continue;
    const path = join(cache, name);
    const mtime = statSync(path).mtimeMs;
    if (mtime > started && (!newest || mtime > newest.mtime)) newest = { path, mtime };
  }
  return newest?.path;
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function kubernetesIsBuilt(): boolean {
  // The demo runs the default version, whose component links build.sh puts in bin/ itself (another
  // version's go to bin/v1.MINOR/): a link that resolves means its binary is cached.
  return existsSync(join(cache, 'bin', 'kubelet'));
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    process.stderr.write('npm run demo needs root (the local cluster runs a kubelet, containerd and network namespaces)\n');
    process.exit(1);
  }
  mkdirSync(logDir, { recursive: true });
  const node = process.execPath;
  const started = Date.now();
  process.stdout.write(
    kubernetesIsBuilt()
      ? 'leaderhook demo: local cluster, images, then four leaders deleted at once (about 2 minutes)\n'
      : 'leaderhook demo: first run on this machine — Kubernetes is compiled from the official Go modules first:\n' +
          '  20-40 minutes on 2 cores (progress below), cached for every later run, which takes about 2 minutes\n',
  );
  const steps: Step[] = [
    { title: 'local Kubernetes cluster', log: 'cluster.log', argv: ['bash', 'test/cluster/up.sh'], progress: kubernetesBuildProgress },
    { title: 'test images (pause, operators)', log: 'images.log', argv: ['bash', '-c', 'test/images/build-test-images.sh && test/operators/build.sh'] },
    { title: 'leaderhook image', log: 'leaderhook-image.log', argv: ['bash', 'scripts/build-local-image.sh'] },
    {
      title: 'failover scenario',
      log: 'scenario.log',
      argv: ['bash', 'test/cluster/in-netns.sh', node, 'scripts/demo/run-scenario.ts'],
      showOutput: true,
    },
  ];
  try {
    for (const step of steps) await run(step);
  } catch (error) {
    if (!(error instanceof PhaseFailed)) throw error;
    process.stdout.write(`\ndemo failed in phase "${error.phase}": ${error.message}\nread its log: ${error.log}\n`);
    process.exit(1);
  }
  process.stdout.write(
    [
      '',
      `done in ${seconds(Date.now() - started)}. The cluster keeps running; look around:`,
      '  test/cluster/in-netns.sh kubectl get pods -A',
      '  test/cluster/in-netns.sh kubectl get events -n demo-with-leaderhook --field-selector reason=LeaderLockReleased',
      '  test/cluster/in-netns.sh kubectl logs -n demo-with-leaderhook deploy/lfl-operator -c leaderhook-release',
      'run it again: npm run demo    tear down: npm run cluster:down',
      `logs of every phase: ${logDir}`,
      '',
    ].join('\n'),
  );
}

await main();
