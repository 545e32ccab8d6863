import { html, Html } from './html.js';

// Agent and check output is written for a terminal: colours (SGR escape sequences) and
// progress bars (carriage returns) included. On a page it is attacker data twice over, as
// markup and as escape sequences: colours become spans with fixed classes (never a style
// or anything taken from the text), every other escape sequence and control character is
// dropped, and the text itself is escaped.

/** The style SGR codes have set so far. */
interface Style {
  fg?: number | undefined;
  bg?: number | undefined;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
}

/**
 * Every escape sequence: CSI (7-bit or 8-bit, its parameters, intermediates and final byte;
 * the final may be missing in a cut tail), OSC (ended by BEL or ST, or by the end of a cut
 * tail), then any other ESC sequence.
 */
// eslint-disable-next-line no-control-regex
const escapes = /(?:\x1b\[|\x9b)([0-?]*)([ -/]*)([@-~]?)|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?/g;
/** Control characters but tab and newline, and the bidirectional overrides that could disguise a line. */
// eslint-disable-next-line no-control-regex
const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Splits text before each escape sequence, so each part starts with at most one. */
// eslint-disable-next-line no-control-regex
const beforeEscape = /(?=\x1b|\x9b)/;

/**
 * Terminal output as escaped markup: SGR colours (the 16 standard ones, also as 256-colour
 * indexes below 16) and bold, dim, italic and underline as `ansi-*` classes; other colours
 * shown in the default one; every other escape sequence and control character removed; a
 * line redrawn with carriage returns shown as it ended.
 */
export function ansiHtml(text: string): Html {
  const out: Html[] = [];
  let style: Style = {};
  for (const part of text.split(/\r?\n/).map(lastRedraw).join('\n').split(beforeEscape)) {
    escapes.lastIndex = 0;
    const match = escapes.exec(part);
    let rest = part;
    if (match?.index === 0) {
      rest = part.slice(match[0].length);
      if (match[3] === 'm' && match[2] === '') style = applySgr(style, match[1] ?? '');
    }
    const shown = rest.replace(escapes, '').replace(controls, '');
    if (shown === '') continue;
    const classes = classesOf(style);
    out.push(classes === '' ? html`${shown}` : html`<span class="${classes}">${shown}</span>`);
  }
  return new Html(out.map((part) => part.text).join(''));
}

/** What a line shows once its carriage returns have redrawn it (a progress bar): the last non-empty part. */
function lastRedraw(line: string): string {
  const parts = line.split('\r').filter((part) => part !== '');
  return parts[parts.length - 1] ?? '';
}

/** The style after an SGR sequence's parameters (`1;31`, `38;5;9`, `` = reset). */
function applySgr(style: Style, params: string): Style {
  const codes = params === '' ? [0] : params.split(/[;:]/).map((p) => (p === '' ? 0 : Number(p)));
  let next = { ...style };
  for (let i = 0; i < codes.length; i += 1) {
    const code = codes[i] ?? 0;
    if (code === 38 || code === 48) {
      // Extended colour: 5;n (256 colours) or 2;r;g;b. Only the 16 standard ones have classes.
      const indexed = codes[i + 1] === 5 ? codes[i + 2] : undefined;
      const colour = indexed !== undefined && indexed < 16 ? indexed : undefined;
      next = code === 38 ? { ...next, fg: colour } : { ...next, bg: colour };
      i += codes[i + 1] === 5 ? 2 : codes[i + 1] === 2 ? 4 : 0;
    } else next = applyCode(next, code);
  }
  return next;
}

/** One plain SGR code; codes without a class (blink, inverse, fonts) change nothing. */
function applyCode(style: Style, code: number): Style {
  if (code === 0) return {};
  if (code === 1) return { ...style, bold: true };
  if (code === 2) return { ...style, dim: true };
  if (code === 3) return { ...style, italic: true };
  if (code === 4) return { ...style, underline: true };
  if (code === 22) return { ...style, bold: false, dim: false };
  if (code === 23) return { ...style, italic: false };
  if (code === 24) return { ...style, underline: false };
  if (code >= 30 && code <= 37) return { ...style, fg: code - 30 };
  if (code >= 90 && code <= 97) return { ...style, fg: code - 90 + 8 };
  if (code === 39) return { ...style, fg: undefined };
  if (code >= 40 && code <= 47) return { ...style, bg: code - 40 };
  if (code >= 100 && code <= 107) return { ...style, bg: code - 100 + 8 };
  if (code === 49) return { ...style, bg: undefined };
  return style;
}

function classesOf(style: Style): string {
  const classes: string[] = [];
  if (style.fg !== undefined) classes.push(`ansi-fg-${style.fg}`);
  if (style.bg !== undefined) classes.push(`ansi-bg-${style.bg}`);
  if (style.bold === true) classes.push('ansi-bold');
  if (style.dim === true) classes.push('ansi-dim');
  if (style.italic === true) classes.push('ansi-italic');
  if (style.underline === true) classes.push('ansi-underline');
  return classes.join(' ');
}
