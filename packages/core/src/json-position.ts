/** Where and why a text is not JSON. Positions are 0-based offsets, lines/columns 1-based. */
export interface JsonSyntaxProblem {
  position: number;
  line: number;
  column: number;
  reason: string;
}

type State = 'value' | 'value_or_end' | 'key' | 'key_or_end' | 'colon' | 'after_value';

const numberPattern = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const hexPattern = /[0-9a-fA-F]{4}/y;

function describeChar(text: string, i: number): string {
  const ch = text.codePointAt(i) ?? 0;
  return ch < 0x20 || ch === 0x7f ? `U+${ch.toString(16).padStart(4, '0')}` : `'${String.fromCodePoint(ch)}'`;
}

/** Index after the string starting at `start` (a `"`), or a problem `[position, reason]`. */
function scanString(text: string, start: number): number | [number, string] {
  let j = start + 1;
  while (j < text.length) {
    const ch = text.charCodeAt(j);
    if (ch === 0x22) return j + 1;
    if (ch < 0x20) return [j, `unescaped control character ${describeChar(text, j)} in string`];
    if (ch === 0x5c) {
      const esc = text[j + 1];
      if (esc === 'u') {
        hexPattern.lastIndex = j + 2;
        if (!hexPattern.test(text)) return [j, 'invalid \\u escape in string'];
        j += 6;
        continue;
      }
      if (esc === undefined || !'"\\/bfnrt'.includes(esc)) return [j, 'invalid escape in string'];
      j += 2;
      continue;
    }
    j += 1;
  }
  return [start, 'unterminated string'];
}

function problem(text: string, position: number, reason: string): JsonSyntaxProblem {
  let line = 1;
  let lineStart = 0;
  for (let k = 0; k < position && k < text.length; k += 1) {
    if (text.charCodeAt(k) === 0x0a) {
      line += 1;
      lineStart = k + 1;
    }
  }
  return { position, line, column: position - lineStart + 1, reason };
}

/**
 * Finds the first JSON syntax error in `text`, or `undefined` when it is valid JSON.
 * `JSON.parse` messages differ between Node versions and some carry no position, so
 * this small iterative scanner (no recursion, so deep nesting cannot overflow) is run
 * after a failed parse to say exactly where.
 */
export function findJsonSyntaxProblem(text: string): JsonSyntaxProblem | undefined {
  const stack: string[] = [];
  let state: State = 'value';
  let i = 0;
  for (;;) {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i += 1;
    if (i >= text.length) {
      if (state === 'after_value' && stack.length === 0) return undefined;
      return problem(text, i, 'unexpected end of input');
    }
    const c = text[i];
    if (state === 'value' || state === 'value_or_end') {
      if (state === 'value_or_end' && c === ']') {
        stack.pop();
        i += 1;
        state = 'after_value';
      } else if (c === '{' || c === '[') {
        stack.push(c);
        i += 1;
        state = c === '{' ? 'key_or_end' : 'value_or_end';
      } else if (c === '"') {
        const end = scanString(text, i);
        if (typeof end !== 'number') return problem(text, end[0], end[1]);
        i = end;
        state = 'after_value';
      } else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
        numberPattern.lastIndex = i;
        const match = numberPattern.exec(text);
        if (match === null) return problem(text, i, 'invalid number');
        i += match[0].length;
        state = 'after_value';
      } else {
        const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, i));
        if (literal === undefined) return problem(text, i, `unexpected character ${describeChar(text, i)}`);
        i += literal.length;
        state = 'after_value';
      }
    } else if (state === 'key' || state === 'key_or_end') {
      if (state === 'key_or_end' && c === '}') {
        stack.pop();
        i += 1;
        state = 'after_value';
      } else if (c === '"') {
        const end = scanString(text, i);
        if (typeof end !== 'number') return problem(text, end[0], end[1]);
        i = end;
        state = 'colon';
      } else {
        return problem(text, i, `expected property name in double quotes, got ${describeChar(text, i)}`);
      }
    } else if (state === 'colon') {
      if (c !== ':') return problem(text, i, `expected ':', got ${describeChar(text, i)}`);
      i += 1;
      state = 'value';
    } else {
      const top = stack[stack.length - 1];
      if (top === undefined) return problem(text, i, `unexpected ${describeChar(text, i)} after the JSON value`);
      const close = top === '{' ? '}' : ']';
      if (c === ',') {
        i += 1;
        state = top === '{' ? 'key' : 'value';
      } else if (c === close) {
        stack.pop();
        i += 1;
      } else {
        return problem(text, i, `expected ',' or '${close}', got ${describeChar(text, i)}`);
      }
    }
  }
}
