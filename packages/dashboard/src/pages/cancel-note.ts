import type { RunRecord } from '@codefleet/core';
import type { JournalEntry } from '@codefleet/store';
import { timeAgo } from '../format.js';
import { html, type Html } from '../html.js';

/** The newest cancel of the run in its journal (newest first), with the operator's reason. */
function cancelOf(journal: readonly JournalEntry[]): Extract<JournalEntry, { kind: 'action' }> | undefined {
  return journal.find(
    (entry): entry is Extract<JournalEntry, { kind: 'action' }> => entry.kind === 'action' && entry.action === 'cancel',
  );
}

/**
 * What the run page says of a cancel: asked for and pending, or done; each with who asked
 * and the reason they gave (kept in the journal: the worker's error names only who).
 */
export function cancelNote(
  run: RunRecord,
  pending: { by: string; at: number } | undefined,
  journal: readonly JournalEntry[],
  now: number,
): Html | string {
  const asked = cancelOf(journal);
  const reason = asked?.detail === undefined ? '' : html` Reason: <q data-cancel-reason="">${asked.detail}</q>`;
  if (pending !== undefined)
    return html`<p class="notice" data-cancel="pending">Cancel requested by ${pending.by} ${timeAgo(now, pending.at)}; the worker stops it at its next heartbeat or stage.${reason}</p>`;
  if (run.outcome === 'cancelled' && asked !== undefined)
    return html`<p class="notice" data-cancel="done">Cancelled by ${asked.by} ${timeAgo(now, asked.at)}.${reason}</p>`;
  return '';
}
