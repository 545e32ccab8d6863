/**
 * How codefleet shows a duration everywhere (CLI, live progress, dashboard, PR notes):
 * `526ms`, `4.2s`, `12s`, `3m 07s`, `2h 05m`, `2d 07h`. Below ten seconds a tenth is kept,
 * so a check that takes half a second is not `0s`; longer ones keep two units. A negative or
 * NaN time (a clock that stepped back, a missing stamp) shows as `0ms`, never as `-3s`.
 */
export function formatDuration(ms: number): string {
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
