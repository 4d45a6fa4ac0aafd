/**
 * leaderhook's webhook as the image runs it, for the benchmarks: src/ compiled
 * (`node dist/cli.js webhook`) into a scratch directory, the V8 heap it gets
 * under a container's memory limit, and what /proc says about the process's
 * memory.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repo = resolve(new URL('../../', import.meta.url).pathname);

/** Compiles `root`/src as the image build does, into a scratch directory that resolves this checkout's node_modules; returns its cli.js. */
export function compileLeaderhook(root: string, into: string): string {
  const out = join(into, 'leaderhook');
  try {
    execFileSync(join(repo, 'node_modules/.bin/tsc'), ['-p', join(root, 'tsconfig.build.json'), '--outDir', join(out, 'dist')], { encoding: 'utf8' });
  } catch (error) {
    // tsc exits non-zero on a type error but still emits; a missing cli.js is what matters.
    if (!existsSync(join(out, 'dist/cli.js'))) throw new Error(`compiling ${root}/src: ${String((error as { stdout?: string }).stdout ?? error)}`);
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
