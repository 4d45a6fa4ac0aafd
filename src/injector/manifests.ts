/**
 * The injector over a stream of manifests, for `leaderhook inject`: GitOps
 * users render what the webhook would do instead of running it (as
 * `istioctl kube-inject` does for Istio). Pure like the rest of src/injector:
 * text and settings in, text and warnings out.
 *
 * Pods are injected; workloads get their pod template injected (the pods they
 * create are then already injected, and the webhook leaves them as they are);
 * everything else passes through. A document that needs no change is written
 * back byte for byte; a changed one is edited in its YAML tree, so its
 * comments, key order and quoting survive and a Git diff shows only what
 * leaderhook adds.
 */
import { isDeepStrictEqual } from 'node:util';
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { type Document, isAlias, isMap, isSeq, type Node, parseAllDocuments } from 'yaml';
import { isRecord } from '../is-record.ts';
import { injectPod } from './index.ts';
import type { InjectionReason, InjectionSettings } from './types.ts';
import { injectWorkload } from './workloads.ts';

/** Input leaderhook cannot inject: the message names the document (and item) at fault. */
export class ManifestError extends Error {}

export interface InjectedManifests {
  /** The documents in their order, each injected or as it was. */
  output: string;
  /** The injector's warnings, each naming its document and object. */
  warnings: string[];
}

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: unknown; generateName?: unknown; namespace?: unknown };
  items?: unknown;
}

/** What one object needs: its patch, against the whole document, and its warnings. */
interface Change {
  patch: Operation[];
  warnings: string[];
}

/**
 * Injects every Pod and workload of a multi-document YAML (or JSON) stream.
 * Throws a ManifestError naming the document for input that is not YAML, not
 * a Kubernetes object, or a Pod or workload without containers; nothing is
 * returned then, so a caller never writes half a stream.
 */
export function injectManifests(text: string, settings: InjectionSettings): InjectedManifests {
  const parsed = parseAllDocuments(text);
  const documents = Array.isArray(parsed) ? parsed : [];
  const warnings: string[] = [];
  const pieces: string[] = [];
  documents.forEach((document, index) => {
    const source = text.slice(index === 0 ? 0 : document.range[0], documents[index + 1]?.range[0] ?? text.length);
    const where = `document ${index + 1}`;
    const firstError = document.errors[0];
    if (firstError) {
      const at = firstError.linePos?.[0];
      // The parser's message repeats the position and quotes the source; the first sentence says it.
      const message = firstError.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      throw new ManifestError(`${where}${at ? ` (line ${at.line}, column ${at.col})` : ''}: not valid YAML: ${message}`);
    }
    const value: unknown = document.toJS();
    // An empty document, or one of comments only: nothing to inject, nothing to refuse.
    if (value === null || value === undefined) {
      pieces.push(source);
      return;
    }
    const change = changeFor(value, where, settings);
    warnings.push(...change.warnings);
    pieces.push(change.patch.length === 0 ? source : edited(document, change.patch, source, where));
  });
  return { output: pieces.join(''), warnings };
}

function isKubeObject(value: unknown): value is KubeObject {
  return isRecord(value) && typeof value.apiVersion === 'string' && typeof value.kind === 'string';
}

/** `Deployment my-operator`, as people name objects. */
function describe(object: KubeObject): string {
  const name = object.metadata?.name ?? object.metadata?.generateName;
  return typeof name === 'string' && name !== '' ? `${object.kind} ${name}` : object.kind;
}

function changeFor(value: unknown, where: string, settings: InjectionSettings, pointer = ''): Change {
  if (!isKubeObject(value)) throw new ManifestError(`${where}: not a Kubernetes object (a mapping with apiVersion and kind)`);
  const label = `${where} (${describe(value)})`;
  if (value.apiVersion === 'v1' && value.kind === 'List') {
    if (!Array.isArray(value.items)) throw new ManifestError(`${label}: a List without an items list`);
    const changes = value.items.map((item, i) => changeFor(item, `${where}, item ${i + 1}`, settings, `${pointer}/items/${i}`));
    return { patch: changes.flatMap((c) => c.patch), warnings: changes.flatMap((c) => c.warnings) };
  }
  let result: { reason: InjectionReason; message: string; patch: Operation[]; warnings: string[] } | undefined;
  if (value.apiVersion === 'v1' && value.kind === 'Pod') result = injectPod(value, settings);
  else result = injectWorkload(value, settings);
  if (result === undefined) return { patch: [], warnings: [] };
  if (result.reason === 'notAPod') throw new ManifestError(`${label}: ${result.message}`);
  return {
    patch: result.patch.map((op) => ({ ...op, path: pointer + op.path })),
    // The injector's warnings start with "leaderhook: "; here the object they concern says more.
    warnings: result.warnings.map((w) => `${label}: ${w.replace(/^leaderhook: /, '')}`),
  };
}

/**
 * The document with `patch` applied to its YAML tree, rendered in the
 * source's own sequence indentation. The tree edit must give exactly what
 * the patch gives the plain object; anything else is a bug here, and no
 * output is better than a wrong one.
 */
function edited(document: Document, patch: Operation[], source: string, where: string): string {
  const expected = fastJsonPatch.applyPatch(document.toJS(), structuredClone(patch), true, false).newDocument;
  for (const op of patch) applyToTree(document, op, where);
  if (!isDeepStrictEqual(document.toJS(), expected)) {
    throw new Error(`${where}: editing the YAML tree gave another object than the injector's patch (a bug in leaderhook inject)`);
  }
  // JSON in, JSON out: flow YAML with bare keys would be valid, and unreadable.
  if (isJsonDocument(source)) return `${document.directives?.docStart ? '---\n' : ''}${JSON.stringify(expected, null, 2)}\n`;
  return document.toString({ indentSeq: !sequencesUnindented(source), lineWidth: 0, flowCollectionPadding: false });
}

/** True when the document, past its `---` and comments, is a JSON object. */
function isJsonDocument(source: string): boolean {
  return /^(?:\s*(?:---[^\n]*|#[^\n]*)?\n)*\s*\{/.test(source);
}

/** True when the source writes block sequences at their key's indentation (`key:\n- item`), as kubectl does. */
function sequencesUnindented(source: string): boolean {
  const first = /^( *)[^\s#-][^\n]*:[ \t]*\n(?: *#[^\n]*\n)*( *)- /m.exec(source);
  return first !== null && first[1] === first[2];
}

function unescapeToken(token: string): string {
  return token.replaceAll('~1', '/').replaceAll('~0', '~');
}

/** One add, replace or remove (all the injector's diff makes) on the YAML tree. */
function applyToTree(document: Document, op: Operation, where: string): void {
  if (op.op !== 'add' && op.op !== 'replace' && op.op !== 'remove') throw new Error(`${where}: unexpected patch operation ${op.op}`);
  const tokens = op.path.split('/').slice(1).map(unescapeToken);
  const last = tokens.pop();
  if (last === undefined) throw new Error(`${where}: a patch of the whole document`);
  let parent: unknown = document.contents;
  for (const token of tokens) parent = child(parent, token, op.path, where);
  if (isAlias(parent)) throw aliasError(op.path, where);
  const value = op.op === 'remove' ? undefined : document.createNode(op.value);
  if (isMap(parent)) {
    if (op.op === 'remove') parent.delete(last);
    else parent.set(last, value);
  } else if (isSeq(parent)) {
    const index = last === '-' ? parent.items.length : Number(last);
    if (op.op === 'add') parent.items.splice(index, 0, value);
    else if (op.op === 'replace') parent.items[index] = value;
    else parent.items.splice(index, 1);
  } else {
    throw new ManifestError(`${where}: ${op.path} does not lead to a mapping or a list`);
  }
}

/** An edit through an alias would change every place the anchor is used, not just this one. */
function aliasError(path: string, where: string): ManifestError {
  return new ManifestError(`${where}: ${path} goes through a YAML alias, which leaderhook inject cannot change alone; expand the alias`);
}

function child(node: unknown, token: string, path: string, where: string): unknown {
  if (isAlias(node)) throw aliasError(path, where);
  if (isMap(node)) return node.get(token, true);
  if (isSeq(node)) return node.items[Number(token)] as Node | undefined;
  throw new ManifestError(`${where}: ${path} does not exist`);
}
