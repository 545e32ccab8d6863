/** `ms` as `2h 05m`, `3m 07s`, `12s`, `4.2s` or `526ms`: a check that takes half a second is not `0s`. */
export function duration(ms: number): string {
  if (!(ms >= 0)) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${String(h % 24).padStart(2, '0')}h`;
}

/** How long ago `at` (ISO or epoch ms) was, from `now` (epoch ms). */
export function ago(now: number, at: string | number): string {
  const t = typeof at === 'number' ? at : Date.parse(at);
  return Number.isFinite(t) ? `${duration(now - t)} ago` : 'unknown';
}
