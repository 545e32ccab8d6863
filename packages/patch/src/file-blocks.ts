// Whole-file blocks: a fenced block that is a file's complete new content. Its path is in
// the info string (```` ```ts:src/a.ts ````), or where models and Aider's "whole" format put
// it: `title="src/a.ts"` after the language, the line above the fence (bare, a heading, in
// bold or backticks), or a comment on the block's first line. A block that leaves lines out
// (`// ... existing code ...`) is no whole file: written, it would delete them.
import { PatchParseError } from './errors.js';
import type { Fence } from './fences.js';
import { fileName } from './search-replace.js';

/** The file a block names outside `lang:path`, and its content (a first-line comment naming it taken off). */
export interface NamedBlock {
  path: string;
  body: string;
  /** Said when the path came from the block's first line, which is then not written. */
  note?: string;
}

/** Names that look like files but are products: a heading "Node.js" above a ```js block names no file. */
const products =
  /^(node|vue|next|nuxt|express|three|d3|chart|react|ember|backbone|angular|socket|deno|solid|alpine|knockout|meteor|moment|p5|pixi|babylon|phaser|anime|popper|plotly|leaflet|math|paper|fabric|brain|ml5|video|nest|gatsby|remix|hapi|koa|sails|preact|inferno|mithril|riot|marko|aurelia|polymer|lit|stencil|qwik|astro)\.js$/i;

/** A token that reads as a file path: no spaces, no scheme, with a directory or an extension (or a known bare name). */
function looksLikePath(name: string): boolean {
  if (name === '' || name.length > 250 || /\s|:\/\/|^[-.]+$/.test(name) || name.endsWith('.')) return false;
  if (name.includes('/')) return true;
  // A bare name: an extension in lower case or digits (not "ASP.NET"), and not a product's name.
  return (
    (/\.[a-z0-9_-]*[a-z0-9][a-z0-9_-]*$/.test(name) && !products.test(name)) ||
    /^(Makefile|Dockerfile|Containerfile|Gemfile|Rakefile|Procfile|Justfile|LICENSE)$/i.test(name)
  );
}

const attribute = /(?:^|\s)(?:title|file|filename|path)=(?:"([^"]+)"|'([^']+)'|(\S+))/i;
/** `// src/a.ts`, `# file: app.py`, `<!-- index.html -->`, `-- q.sql`, a C block comment: one path in a comment. */
const commentPath =
  /^\s*(?:\/\/|#(?!!)|--|;+|%|\/\*+|<!--|\{\/\*)\s*(?:(?:file(?:name)?|path)\s*:\s*)?(\S+?)\s*(?:\*\/\}?|-->)?\s*$/i;

/** The path a block without `lang:path` names, if any: `title=`, then the line above, then its first line. */
export function namedBlock(block: Fence): NamedBlock | undefined {
  const titled = attribute.exec(block.info);
  const title = titled === null ? undefined : (titled[1] ?? titled[2] ?? titled[3]);
  if (title !== undefined && looksLikePath(title)) return { path: title, body: block.body };
  const above = block.before === undefined ? undefined : fileName(block.before.replace(/^(?:[-*+]|\d+[.)])\s+/, ''));
  const [first = '', ...rest] = block.body.split('\n');
  const commented = commentPath.exec(first)?.[1];
  const labelled = commented !== undefined && looksLikePath(commented);
  if (above !== undefined && looksLikePath(above)) {
    // The same name again on the first line is a label, not content.
    return labelled && commented === above
      ? { path: above, body: rest.join('\n'), note: firstLineNote(first) }
      : { path: above, body: block.body };
  }
  if (labelled) return { path: commented, body: rest.join('\n'), note: firstLineNote(first) };
  return undefined;
}

const firstLineNote = (line: string) =>
  `its first line ${JSON.stringify(line.trim().slice(0, 80))} was read as the file's name and is not written`;

/** A comment that stands for lines left out: `// ... existing code ...`, `# ...`, `<!-- rest unchanged ... -->`. */
const elided = /^\s*(?:\/\/|#|--|;|%|\/\*+|<!--|\{\/\*)\s*(.*?)\s*(?:\*\/\}?|-->)?\s*$/;
/** Comment text that is a placeholder: it opens with `...`, or says "rest of ..." / "existing ..." and trails off. */
const placeholder =
  /^[[(]?\s*(?:\.\.\.|…)|^(?:the\s+)?(?:rest|remaining|existing|other|previous|unchanged|omitted)\b.*(?:\.\.\.|…)[\])]?$/i;

/**
 * Throws when `body`, written whole to `path`, holds a placeholder for lines it leaves out:
 * a comment that opens with `...` (or `…`), or one like "rest of the file ..." that trails off.
 */
export function refuseElided(where: string, path: string, body: string): void {
  const lines = body.split('\n');
  // Documentation shows code with `// ...` in its examples; only an HTML comment elides the page itself.
  const prose = /\.(md|mdx|markdown|rst|adoc|txt)$/i.test(path);
  const at = lines.findIndex((line) => {
    if (prose && !line.trimStart().startsWith('<!--')) return false;
    const text = elided.exec(line)?.[1];
    return text !== undefined && placeholder.test(text);
  });
  if (at === -1) return;
  throw new PatchParseError(
    `${where} writes ${path} whole, but its line ${at + 1} ${JSON.stringify((lines[at] ?? '').trim().slice(0, 80))} stands for lines left out, which writing it would delete; send the complete file, or change it with a SEARCH/REPLACE block or a diff`,
  );
}

/**
 * Throws when `body`, written whole to `path`, ends inside a fenced block of its own: the
 * reply nested ```` ``` ```` in ```` ``` ```` (a README with code in it), so the inner block's
 * closing fence ended the file early, and the rest of it is lost.
 */
export function refuseCutShort(where: string, path: string, body: string): void {
  let open: { line: number; fence: string } | undefined;
  for (const [i, line] of body.split('\n').entries()) {
    const fence = /^\s*(`{3,}|~{3,})(.*)$/.exec(line);
    if (fence === null) continue;
    const [, marks = '', rest = ''] = fence;
    if (open === undefined) open = { line: i + 1, fence: marks };
    else if (rest.trim() === '' && marks[0] === open.fence[0] && marks.length >= open.fence.length) open = undefined;
  }
  if (open === undefined) return;
  throw new PatchParseError(
    `${where} writes ${path} whole, but its line ${open.line} opens a fenced block that the block's own end closed: the rest of the file is cut off; open the outer block with more backticks than any fence inside it (\`\`\`\`)`,
  );
}
