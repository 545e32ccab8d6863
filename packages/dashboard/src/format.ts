import { formatDuration } from '@codefleet/core';

/** How long ago `at` (ISO or epoch ms) was, from `now` (epoch ms). */
export function ago(now: number, at: string | number): string {
  const t = typeof at === 'number' ? at : Date.parse(at);
  return Number.isFinite(t) ? `${formatDuration(now - t)} ago` : 'unknown';
}
