// Everything on a page that is not a literal of this package is data, and much of it is
// an attacker's (titles, agent output, repository names, error messages): the `html`
// template escapes every interpolated value unless it is already rendered `Html`.

const entities: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

const special = /[&<>"']/;

/** `text` safe in element content and in quoted attribute values. */
function escapeHtml(text: string): string {
  // Most values (numbers, ids, classes) have nothing to escape: a test is cheaper than a replace.
  return special.test(text) ? text.replace(/[&<>"']/g, (c) => entities[c] ?? c) : text;
}

/** Markup that has been rendered (escaped) already. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** A value as markup: `Html` as is, arrays joined, nothing for undefined/null/false, the rest escaped. */
function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  // A number's text has nothing to escape (charts draw thousands of them).
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) {
    let out = '';
    for (const item of value) out += render(item);
    return out;
  }
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template: literals are markup, every `${value}` is escaped (see {@link render}). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/**
 * A link target for a URL that came from data (a pull request's URL): http(s) only, so a
 * `javascript:` or `data:` URL written by an agent or a forge never becomes a link.
 */
export function safeHref(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}
