import { createHash } from 'node:crypto';
import type { RunSummary } from './port.js';
import { summarizeStored } from './query.js';

// A page of 100 runs spent most of its time checking each stored record against the run
// schema (~0.1 ms a record, 10 times the JSON parse), and every open dashboard tab reads the
// same pages again every few seconds. The summary is a pure function of the run id and the
// stored text, so it is kept by the digest of both: any change to the text, whoever made it
// (a save, an older writer, a hand edit), is a new key and summarized afresh. Keeping the
// digest rather than the text bounds the memory to about the summaries.

/** Summaries kept per store: a few pages of each of a few filters. */
const summaryMemoSize = 2_000;

/**
 * `summarizeStored`, remembering the newest `size` summaries it made. Each call answers a
 * copy, so a caller that changes one does not change what the next is given.
 */
export function memoizedSummaries(size = summaryMemoSize): (runId: string, text: string) => RunSummary {
  const kept = new Map<string, RunSummary>();
  return (runId, text) => {
    const key = createHash('sha256').update(runId).update('\0').update(text).digest('base64');
    let summary = kept.get(key);
    if (summary === undefined) {
      summary = summarizeStored(runId, text);
      if (kept.size >= size) kept.delete(kept.keys().next().value ?? '');
    } else kept.delete(key);
    // Last in the map's order: the least recently read goes first.
    kept.set(key, summary);
    return copyOf(summary);
  };
}

function copyOf(summary: RunSummary): RunSummary {
  return summary.pullRequest === undefined ? { ...summary } : { ...summary, pullRequest: { ...summary.pullRequest } };
}
