/** The figures both sandbox benchmarks print: medians, nearest-rank quantiles, milliseconds. */

/** Nearest rank: p90 of 20 values is the 18th. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export function ms(value: number): string {
  return `${value >= 0 ? '' : '-'}${Math.abs(value).toFixed(1)} ms`;
}

export function loadLine(loads: readonly number[]): string {
  return `load average ${loads.map((n) => n.toFixed(2)).join(' ')}`;
}

/** One table row: a left-aligned label, then right-aligned cells. */
export function row(cells: readonly string[], labelWidth = 54): void {
  console.log(cells.map((cell, i) => (i === 0 ? cell.padEnd(labelWidth) : cell.padStart(11))).join(' '));
}
