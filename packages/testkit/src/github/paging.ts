/**
 * One page of a list, as GitHub's REST API pages it: `per_page` defaults to 30 and is
 * capped at 100, `page` counts from 1, and a `Link` header names the `next`, `last`,
 * `first` and `prev` pages (absent when everything fits on one page), each URL being the
 * request's own with `page` replaced.
 */
export function pageOf<T>(items: readonly T[], url: URL): { items: T[]; link?: string } {
  const asked = Number.parseInt(url.searchParams.get('per_page') ?? '', 10);
  const perPage = Number.isFinite(asked) && asked > 0 ? Math.min(asked, 100) : 30;
  const requested = Number.parseInt(url.searchParams.get('page') ?? '', 10);
  const page = Number.isFinite(requested) && requested > 0 ? requested : 1;
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const slice = items.slice((page - 1) * perPage, page * perPage);
  const at = (n: number) => {
    const copy = new URL(url);
    copy.searchParams.set('page', String(n));
    return `<${copy.toString()}>`;
  };
  const links: string[] = [];
  if (page < last) links.push(`${at(page + 1)}; rel="next"`, `${at(last)}; rel="last"`);
  if (page > 1) links.push(`${at(1)}; rel="first"`, `${at(Math.min(page - 1, last))}; rel="prev"`);
  return links.length === 0 ? { items: slice } : { items: slice, link: links.join(', ') };
}
