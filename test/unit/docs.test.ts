/**
 * The documentation says only what the repository holds: in README.md,
 * CONTRIBUTING.md, CHANGELOG.md and docs/*.md,
 *   - every relative link names a file that exists, and its #anchor a heading
 *     of the target (GitHub's slugs) or an explicit <a id>/<a name>;
 *   - every repository path in inline code (src/, test/, docs/, deploy/,
 *     charts/, scripts/, with a file extension) exists;
 *   - every `npm run X` names a script of package.json;
 *   - every figure of the README's Measured section (a number with a unit:
 *     "0.12 s", "15.3×", "16.3 MiB") appears in a generated document, with
 *     its unit or in a table whose header or lead-in line names the unit;
 * and the install blocks test/e2e/readme-install.test.ts runs are all there.
 * No cluster, no network.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { installBlocks } from '../support/install-blocks.ts';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const docs = [
  'README.md',
  'CONTRIBUTING.md',
  'CHANGELOG.md',
  ...readdirSync(join(repo, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const read = (file: string) => readFileSync(join(repo, file), 'utf8');

/** The text with fenced code blocks blanked out, line for line, so line numbers stay. */
export function withoutFences(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
      if (fence === undefined) {
        if (marker) {
          fence = marker;
          return '';
        }
        return line;
      }
      if (marker?.startsWith(fence) && line.trim() === marker) fence = undefined;
      return '';
    })
    .join('\n');
}

/** Inline code spans of one line-oriented text (fences removed first). */
function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
}

/** GitHub's anchor for a heading: the rendered text, lowercased, punctuation but '-' and '_' dropped, spaces to '-'. */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a Markdown file offers: its headings' slugs (repeats numbered as GitHub does) and explicit <a id|name>. */
export function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      found.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(m[1]!);
  }
  return found;
}

/** Links of a Markdown text outside code: [text](target) and ![alt](target). */
function links(markdown: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  withoutFences(markdown)
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/`[^`\n]+`/g, (span) => 'x'.repeat(span.length));
      for (const m of line.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1]!, line: i + 1 });
    });
  return out;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let found = anchorCache.get(file);
  if (!found) {
    found = anchors(readFileSync(file, 'utf8'));
    anchorCache.set(file, found);
  }
  return found;
}

describe('documentation', () => {
  test('relative links name files that exist, and anchors that are headings there', () => {
    const broken: string[] = [];
    for (const doc of docs) {
      for (const { target, line } of links(read(doc))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [pathPart = '', anchor] = target.split('#', 2) as [string, string | undefined];
        const path = decodeURIComponent(pathPart.split('?')[0]!);
        const file = path === '' ? join(repo, doc) : join(repo, dirname(doc), path);
        if (!existsSync(file)) {
          broken.push(`${doc}:${line}: ${target}: no file ${relative(repo, file)}`);
          continue;
        }
        if (anchor !== undefined && file.endsWith('.md') && statSync(file).isFile() && !anchorsOf(file).has(anchor)) {
          broken.push(`${doc}:${line}: ${target}: no heading #${anchor} in ${relative(repo, file)}`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  test('repository paths in inline code exist', () => {
    const missing: string[] = [];
    const path = /^(?:src|test|docs|deploy|charts|scripts)\/[\w./-]*\.[A-Za-z0-9]+$/;
    // Archives are what `npm run release` builds (charts/leaderhook-0.1.0.tgz of a release folder), never repository files.
    const archive = /\.(?:tgz|tar|tar\.gz)$/;
    for (const doc of docs) {
      for (const span of codeSpans(withoutFences(read(doc)))) {
        for (const token of span.split(/\s+/)) {
          if (path.test(token) && !archive.test(token) && !existsSync(join(repo, token))) missing.push(`${doc}: \`${token}\``);
        }
      }
    }
    assert.deepEqual(missing, []);
  });

  test('every npm run names a script of package.json', () => {
    const scripts = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);
    const unknown: string[] = [];
    for (const doc of docs) {
      for (const m of read(doc).matchAll(/\bnpm run(?: -s| --silent)? ([a-z][\w:.-]*[\w])/g)) {
        if (!scripts.includes(m[1]!)) unknown.push(`${doc}: npm run ${m[1]}`);
      }
    }
    assert.deepEqual(unknown, []);
  });

  test("every figure of the README's Measured section is in a generated document", (t) => {
    const measured = section(read('README.md'), 'Measured');
    const figures = readmeFigures(measured);
    assert.ok(figures.length >= 10, `the README's Measured section has figures to check (found ${figures.length})`);
    const sources = GENERATED.map((file) => read(file));
    const unfound = figures.filter((figure) => !sources.some((text) => hasFigure(text, figure)));
    t.diagnostic(`${figures.length} figures checked against ${GENERATED.join(', ')}`);
    assert.deepEqual(
      unfound.map((f) => `${f.number} ${f.unit}`),
      [],
    );
  });

  test('the install blocks test/e2e/readme-install.test.ts runs are each marked once', () => {
    assert.deepEqual([...installBlocks(repo).keys()].sort(), ['helm', 'install', 'mirror', 'uninstall', 'verify']);
  });
});

/** The documents whose figures come from a benchmark or test run. */
const GENERATED = [
  'docs/failover.md',
  'docs/faults.md',
  'docs/performance.md',
  'docs/compatibility.md',
  'docs/faults-multinode.md',
  'docs/faults-lease-crash.md',
  'docs/baseline.md',
  'docs/failover-e2e.md',
  'docs/soak.md',
  'docs/soak-nodes.md',
];

const UNITS = ['ms', 's', 'min', 'MiB', 'KiB', 'GiB', 'MB', '×'] as const;
type Figure = { number: string; unit: string };

/** The text of the `## NAME` section, up to the next heading of that level. */
export function section(markdown: string, name: string): string {
  const start = markdown.indexOf(`\n## ${name}\n`);
  assert.ok(start >= 0, `README.md has a section "## ${name}"`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** Numbers with a unit, outside code, images and link targets; both ends of a range ("0.12–0.13 s"). */
export function readmeFigures(text: string): Figure[] {
  const prose = withoutFences(text)
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\]\([^)]*\)/g, ']')
    .replace(/`[^`\n]+`/g, '');
  const number = '\\d+(?:[.,]\\d+)*';
  const figure = new RegExp(`(?<![\\w.])(${number})(?:\\s?[–-]\\s?(${number}))?\\s?(${UNITS.join('|')})(?![\\w'’])`, 'g');
  const found: Figure[] = [];
  for (const m of prose.matchAll(figure)) {
    for (const n of [m[1], m[2]]) if (n !== undefined) found.push({ number: n.replaceAll(',', ''), unit: m[3]! });
  }
  return found;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const unitWord = (unit: string) => new RegExp(`(?<![\\w'’])${escapeRegExp(unit)}(?![\\w'’])`);

/**
 * Whether `text` states the figure: the number followed by its unit, or the
 * number in a table cell where the table's header row, or the line that leads
 * into the table, names the unit ("p50 ms", "..., ms:").
 */
export function hasFigure(text: string, { number, unit }: Figure): boolean {
  const n = escapeRegExp(number);
  const grouped = escapeRegExp(Number(number).toLocaleString('en-US', { maximumFractionDigits: 10 }));
  if (new RegExp(`(?<![\\d.,])(?:${n}|${grouped})\\s?${escapeRegExp(unit)}(?![\\w'’])`).test(text)) return true;
  const lines = withoutFences(text).split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('|') || lines[i - 1]?.startsWith('|')) continue;
    let lead = i - 1;
    while (lead >= 0 && lines[lead]!.trim() === '') lead--;
    const header = lines[i]!;
    const named = unitWord(unit).test(header) || (lead >= 0 && unitWord(unit).test(lines[lead]!));
    for (let j = i + 2; j < lines.length && lines[j]!.startsWith('|'); j++) {
      if (!named) continue;
      const cells = lines[j]!.split('|');
      if (cells.some((cell) => [...cell.matchAll(/(?<![\d.])\d+(?:\.\d+)?(?![\d.])/g)].some((m) => m[0] === number))) return true;
    }
  }
  return false;
}
