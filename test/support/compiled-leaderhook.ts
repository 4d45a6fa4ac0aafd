/**
 * leaderhook as the image runs it, for the tests and benchmarks that run its
 * hook or webhook as a process: src/ compiled (`node dist/cli.js`) into a
 * scratch directory, and the heap its major collections left, from its
 * `--trace-gc` lines.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const repo = resolve(new URL('../../', import.meta.url).pathname);

/**
 * Compiles `root`/src (this checkout's by default; bench:webhook --root gives
 * another's) as the image build does, into a scratch directory that resolves
 * this checkout's node_modules; returns its cli.js.
 */
export function compileLeaderhook(root = repo, into = mkdtempSync(join(tmpdir(), 'leaderhook-dist-'))): string {
  const out = join(into, 'leaderhook');
  try {
    execFileSync(join(repo, 'node_modules/.bin/tsc'), ['-p', join(root, 'tsconfig.build.json'), '--outDir', join(out, 'dist')], { encoding: 'utf8' });
  } catch (error) {
    // tsc exits non-zero on a type error but still emits; a missing cli.js is what matters.
    if (!existsSync(join(out, 'dist/cli.js'))) throw new Error(`compiling ${root}/src into ${out}: ${String((error as { stdout?: string }).stdout ?? error)}`);
  }
  symlinkSync(join(repo, 'node_modules'), join(out, 'node_modules'));
  copyFileSync(join(root, 'package.json'), join(out, 'package.json'));
  return join(out, 'dist/cli.js');
}

/**
 * The heap a major collection left, in MB as V8 prints them, from one line of
 * `node --trace-gc` ("… Mark-Compact 27.5 (30.1) -> 20.1 (30.1) MB, …", with
 * or without "(reduce)"); undefined for any other line (scavenges, logs).
 */
export function heapAfterMarkCompact(line: string): number | undefined {
  const match = /: Mark-Compact(?: \([a-z ]+\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/.exec(line);
  return match ? Number(match[1]) : undefined;
}
