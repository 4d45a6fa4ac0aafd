/**
 * Where a `node --cpu-prof` profile spent its time: the top functions by self
 * time and by total time (self + callees), as shares of all samples.
 *
 *   node test/bench/cpuprofile-summary.ts <file.cpuprofile> [--top 25]
 *
 * For the webhook benchmark's `--node-flags="--cpu-prof --cpu-prof-dir=DIR"`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '25' } }, allowPositionals: true });
if (positionals.length !== 1) throw new Error('usage: node test/bench/cpuprofile-summary.ts <file.cpuprofile> [--top 25]');
const profile = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Profile;
const top = Number(values.top);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function label(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/');
  return `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
}

const self = new Map<string, number>();
const total = new Map<string, number>();
let all = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  all += dt;
  const leaf = byId.get(id)!;
  self.set(label(leaf), (self.get(label(leaf)) ?? 0) + dt);
  // Each function once per sample, however deep it recurses.
  const seen = new Set<string>();
  for (let n: ProfileNode | undefined = leaf; n; n = parent.has(n.id) ? byId.get(parent.get(n.id)!) : undefined) {
    const l = label(n);
    if (seen.has(l)) continue;
    seen.add(l);
    total.set(l, (total.get(l) ?? 0) + dt);
  }
});

function print(title: string, map: Map<string, number>): void {
  console.log(`\n${title}`);
  for (const [l, t] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * t) / all).toFixed(1).padStart(5)} %  ${l}`);
  }
}

console.log(`${positionals[0]}: ${(all / 1e6).toFixed(2)} s sampled`);
print('self time', self);
print('total time', total);
