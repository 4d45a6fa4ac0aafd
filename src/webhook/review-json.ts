/**
 * JSON.parse for AdmissionReview bodies that leaves every `managedFields`
 * member out, unparsed and not even decoded.
 *
 * The API server's field manager writes managedFields before admission, so
 * every pod reaches the webhook with them, and nothing leaderhook decides
 * reads them (the injector never diffs or patches them; Istio drops them
 * too). On a 270 KB pod they are 60 % of the bytes and most of the objects:
 * parsing them was the largest single cost of an admission, and the garbage
 * they left (and the 270 KB string of the whole body, which V8 keeps in its
 * large-object space until a full GC) drove the webhook's memory at
 * saturation (docs/performance.md). Cutting them out of the bytes first is a
 * scan for brackets and strings over them, about a fifth of what parsing
 * them costs, and only the rest is decoded and parsed.
 *
 * What is cut: a member `"managedFields": [...]` of an object, at any depth,
 * together with one comma next to it, when the scan (strings, escapes,
 * brackets, from the first byte) shows it really is a key of an object.
 * Removing an object member changes no other JSON Pointer, so a patch
 * computed on the rest applies to the whole. Inside the skipped array only
 * strings and bracket balance are checked, not the JSON grammar: a body
 * broken only there is accepted (the API server never sends one). Anything
 * else the scan does not expect makes it give up and parse the whole body,
 * and a pruned body that does not parse is parsed again whole, so every error
 * is JSON.parse's own, about the body as sent. UTF-8 makes the byte scan
 * exact: no byte of a multi-byte character is below 0x80.
 */

const KEY = Buffer.from('"managedFields"');
const UTF8_BOM = [0xef, 0xbb, 0xbf];
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * JSON.parse of a UTF-8 body (a leading byte order mark skipped, as body-parser
 * does), without the `managedFields` members. Throws JSON.parse's SyntaxError
 * for a body that is not JSON.
 */
export function parseReviewJson(body: Buffer): unknown {
  const text = UTF8_BOM.every((b, i) => body[i] === b) ? body.subarray(UTF8_BOM.length) : body;
  const spans = managedFieldsSpans(text);
  if (spans.length === 0) return JSON.parse(text.toString('utf8'));
  const kept: Buffer[] = [];
  let from = 0;
  for (const [start, end] of spans) {
    kept.push(text.subarray(from, start));
    from = end;
  }
  kept.push(text.subarray(from));
  try {
    return JSON.parse(Buffer.concat(kept).toString('utf8'));
  } catch {
    // The original's own error (position and all), or, should the pruning
    // ever be wrong about a valid body, its full parse.
    return JSON.parse(text.toString('utf8'));
  }
}

/**
 * Index just past the string whose opening quote is at `start`, or -1 when it
 * never closes. A loop over the bytes: the strings here are short, and
 * Buffer#indexOf costs more per call than a loop over a few dozen bytes.
 */
function endOfString(text: Buffer, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (c === BACKSLASH) i += 1;
    else if (c === QUOTE) return i + 1;
  }
  return -1;
}

/** The last character of a JSON value: a string's quote, a bracket, a digit, or true/false/null's last letter. */
function endsValue(c: number | undefined): boolean {
  return c !== undefined && (c === QUOTE || c === CLOSE_OBJECT || c === CLOSE_ARRAY || (c >= 0x30 && c <= 0x39) || c === 0x65 || c === 0x6c);
}

function isWhitespace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipWhitespace(text: Buffer, at: number): number {
  while (at < text.length && isWhitespace(text[at])) at += 1;
  return at;
}

/** Index just past the array whose `[` is at `start`, or -1 when its brackets or strings do not close in order. */
function endOfArray(text: Buffer, start: number): number {
  const open: number[] = [];
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (c === QUOTE) {
      const end = endOfString(text, i);
      if (end < 0) return -1;
      i = end - 1;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      open.push(c);
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (open.pop() !== (c === CLOSE_ARRAY ? OPEN_ARRAY : OPEN_OBJECT)) return -1;
      if (open.length === 0) return i + 1;
    }
  }
  return -1;
}

/** The [start, end) ranges of `text` to cut: each managedFields member with one adjacent comma; none when in doubt. */
function managedFieldsSpans(text: Buffer): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  let candidate = text.indexOf(KEY);
  if (candidate < 0) return spans;
  // Outside strings: the open brackets, the last character that is not
  // whitespace, and the one before it.
  const open: number[] = [];
  let last = -1;
  let beforeLast = -1;
  let i = 0;
  while (candidate >= 0) {
    while (i < candidate) {
      const c = text[i]!;
      if (c === QUOTE) {
        const end = endOfString(text, i);
        if (end < 0) return [];
        beforeLast = last;
        last = end - 1;
        i = end;
        continue;
      }
      if (c === OPEN_ARRAY || c === OPEN_OBJECT) open.push(c);
      else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) open.pop();
      if (!isWhitespace(c)) {
        beforeLast = last;
        last = i;
      }
      i += 1;
    }
    if (i > candidate) {
      // The candidate was inside a string.
      candidate = text.indexOf(KEY, i);
      continue;
    }
    const keyEnd = candidate + KEY.length;
    const isMember = open.at(-1) === OPEN_OBJECT && (text[last] === OPEN_OBJECT || text[last] === COMMA);
    const colon = skipWhitespace(text, keyEnd);
    const value = skipWhitespace(text, colon + 1);
    if (!isMember || text[colon] !== COLON || text[value] !== OPEN_ARRAY) {
      // A string "managedFields" that is no such member (a value, say, or
      // managedFields: null) is left to JSON.parse like any other string.
      beforeLast = last;
      last = keyEnd - 1;
      i = keyEnd;
      candidate = text.indexOf(KEY, i);
      continue;
    }
    const valueEnd = endOfArray(text, value);
    if (valueEnd < 0) return [];
    const next = skipWhitespace(text, valueEnd);
    const after = text[next];
    if (text[last] === COMMA) {
      // `<value>, "managedFields": [...]` followed by `,` or `}`: cut from the comma before.
      if (!endsValue(text[beforeLast]) || (after !== COMMA && after !== CLOSE_OBJECT)) return [];
      spans.push([last, valueEnd]);
      i = valueEnd;
    } else if (after === COMMA) {
      // `{ "managedFields": [...], "<key>"...`: cut through the comma after.
      if (text[skipWhitespace(text, next + 1)] !== QUOTE) return [];
      spans.push([candidate, next + 1]);
      i = next + 1;
    } else if (after === CLOSE_OBJECT) {
      // The only member.
      spans.push([candidate, valueEnd]);
      i = valueEnd;
    } else {
      return [];
    }
    candidate = text.indexOf(KEY, i);
  }
  return spans;
}
