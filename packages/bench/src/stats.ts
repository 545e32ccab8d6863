/** Percentiles, formatting and the final table: the pure part of the bench. */

/** The `p`-th percentile (0–100) of `values` by nearest rank; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** The median of `values`. */
export const median = (values: readonly number[]): number => percentile(values, 50);

/** Milliseconds as the bench prints them: `840 ms`, `1.52 s`. */
export function shown(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  return Math.abs(ms) >= 1_000 ? `${(ms / 1_000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
}

/** One row of the final table. `met` is undefined when the figure could not be measured. */
export interface Figure {
  figure: string;
  measured: string;
  target: string;
  met: boolean | undefined;
}

/** The final table: figure, measured, target, met. */
export function table(figures: readonly Figure[]): string {
  const rows = [
    ['figure', 'measured', 'target', 'met'],
    ...figures.map((f) => [f.figure, f.measured, f.target, f.met === undefined ? 'n/a' : f.met ? 'yes' : 'no']),
  ];
  const widths = [0, 1, 2, 3].map((column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(rows[0] ?? []), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** A label padded to a column, then its value: the bench's detail lines. */
export const detail = (label: string, value: string): string => `  ${label.padEnd(58)} ${value}`;
