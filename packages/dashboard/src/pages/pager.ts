import { html, type Html } from '../html.js';

/** Where a page of a list sits in it, and the links to the next one. */
export interface PagerFacts {
  /** The list's own path and the query it keeps across pages (its filters). */
  path: string;
  keep: Readonly<Record<string, string | undefined>>;
  /** 1-based position of the page's first item, and how many the page holds. */
  from: number;
  shown: number;
  /** Every item the filters match. */
  total: number;
  /** The query of the next page (its cursor, its position), when there is one. */
  next?: Record<string, string> | undefined;
  /** What the list holds, for the count: "runs", "dead letters". */
  noun: string;
}

/** The page's query string: the kept filters, then `extra`, empty ones left out. */
function hrefOf(path: string, keep: PagerFacts['keep'], extra: Record<string, string> = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries({ ...keep, ...extra }))
    if (value !== undefined && value !== '') query.set(key, value);
  const text = query.toString();
  return text === '' ? path : `${path}?${text}`;
}

/**
 * The count and the links of a paged list: "101–200 of 12,345 runs", a link back to the
 * first page and one to the next. A cursor only goes on (the store's pages start after a
 * run), so "newest" goes back to the first page rather than one page back.
 */
export function pager(f: PagerFacts): Html {
  const last = f.from + f.shown - 1;
  const range = f.shown === 0 ? `0 of ${count(f.total)}` : `${count(f.from)}–${count(last)} of ${count(f.total)}`;
  const newest = f.from > 1 ? html`<a href="${hrefOf(f.path, f.keep)}" rel="first" class="button">« Newest</a>` : '';
  const older =
    f.next === undefined ? '' : html`<a href="${hrefOf(f.path, f.keep, f.next)}" rel="next" class="button">Older »</a>`;
  return html`<nav class="pager" aria-label="pages"><span data-total="${f.total}">${range} ${f.noun}</span> ${newest} ${older}</nav>`;
}

const count = (n: number) => n.toLocaleString('en-US');

/** A 1-based position given in a query string, or 1 when it is not one. */
export function positionOf(value: unknown): number {
  const n = typeof value === 'string' && /^[0-9]{1,9}$/.test(value) ? Number(value) : 1;
  return n >= 1 ? n : 1;
}
