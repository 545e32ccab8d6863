import { formatDuration } from '@codefleet/core';
import { html, type Html } from './html.js';

/** How long ago `at` (ISO or epoch ms) was, from `now` (epoch ms). */
export function ago(now: number, at: string | number): string {
  const t = typeof at === 'number' ? at : Date.parse(at);
  return Number.isFinite(t) ? `${formatDuration(now - t)} ago` : 'unknown';
}

/** `at` as people read an absolute time: `2026-11-29 19:45:54 UTC`; undefined when it is no time. */
export function absoluteTime(at: string | number): string | undefined {
  const t = typeof at === 'number' ? at : Date.parse(at);
  if (!Number.isFinite(t)) return undefined;
  const iso = new Date(t).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** A `<time>`: `shown` on the page, the absolute time on hover (its title) and for machines. */
function timeElement(at: string | number, shown: string): Html {
  const absolute = absoluteTime(at);
  if (absolute === undefined) return html`<time>${shown}</time>`;
  const t = typeof at === 'number' ? at : Date.parse(at);
  return html`<time datetime="${new Date(t).toISOString()}" title="${absolute}">${shown}</time>`;
}

/** A time shown as how long ago it was (`3m 07s ago`), absolute on hover. */
export function timeAgo(now: number, at: string | number): Html {
  return timeElement(at, ago(now, at));
}

/**
 * A time shown as its clock time, `19:45:54 UTC` on the day of `now` and `Nov 28 19:45 UTC`
 * before, absolute on hover.
 */
export function clockTime(now: number, at: string | number): Html {
  const absolute = absoluteTime(at);
  if (absolute === undefined) return timeElement(at, 'unknown');
  const sameDay = absolute.slice(0, 10) === absoluteTime(now)?.slice(0, 10);
  if (sameDay) return timeElement(at, absolute.slice(11));
  const d = new Date(absolute.slice(0, 10));
  const month = d.toLocaleString('en', { month: 'short', timeZone: 'UTC' });
  return timeElement(at, `${month} ${d.getUTCDate()} ${absolute.slice(11, 16)} UTC`);
}
