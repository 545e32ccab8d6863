import { graphemePrefix } from '@codefleet/core';
import { plainReport, type Report, type ReportState } from '@codefleet/requester';

/**
 * Slack mrkdwn for text we do not control (titles, reasons, answers, chat replies). Slack
 * turns `<!channel>`, `<@U…>` and `<url|label>` into broadcasts, mentions and links; with
 * `&`, `<` and `>` escaped (the only three Slack asks to escape) they stay text.
 */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * A mrkdwn code block holding `text` escaped; runs of backticks are broken with a zero-width
 * space so the text cannot close the block and continue as live mrkdwn.
 */
export function codeBlock(text: string): string {
  return '```\n' + escapeMrkdwn(text).replace(/`(?=`)/g, '`\u200b') + '\n```';
}

/**
 * Characters of one message we send. Slack refuses text over 40 000 characters
 * (`msg_too_long`) and truncates long messages in clients; a section block takes 3 000.
 * Escaping can grow text (`<` → `&lt;`), so callers bound before they escape with room.
 */
export const maxMessageChars = 3_900;

/** `text` cut to `max` characters (never through an emoji or other grapheme), with a marker saying it was cut. */
export function bounded(text: string, max = maxMessageChars): string {
  return text.length <= max ? text : `${graphemePrefix(text, max - 20)}\n… (cut for Slack)`;
}

/** The reaction that marks each state on the request's message. */
export const stateReactions: Readonly<Record<ReportState, string>> = {
  queued: 'eyes',
  running: 'hourglass_flowing_sand',
  done: 'white_check_mark',
  answered: 'white_check_mark',
  failed: 'x',
  cancelled: 'no_entry_sign',
};

const stateEmoji: Readonly<Record<ReportState, string>> = {
  queued: ':eyes:',
  running: ':hourglass_flowing_sand:',
  done: ':white_check_mark:',
  answered: ':speech_balloon:',
  failed: ':x:',
  cancelled: ':no_entry_sign:',
};

/** How a report reads in Slack: the status line (edited in place) and, for final reports, the reply. */
export interface SlackReportText {
  state: ReportState;
  status: string;
  /** The final reply, posted as a new message in the thread so the user is notified. */
  final?: string;
}

/**
 * Renders a report as Slack mrkdwn. Every word from the report passes through
 * `escapeMrkdwn` (after `mask`, which hides secret values); the answer or reason quoted
 * whole goes in a code block. The quote is bounded before escaping so the message stays
 * under {@link maxMessageChars}.
 */
export function renderReport(report: Report, mask: (text: string) => string): SlackReportText {
  const plain = plainReport(report);
  const safe = (text: string) => escapeMrkdwn(mask(text));
  const head = `${stateEmoji[plain.state]} *${safe(plain.headline)}*`;
  const lines = [head, ...plain.details.map(safe)].join('\n');
  const quote = plain.quote === undefined ? '' : `\n${codeBlock(bounded(mask(plain.quote), 2_400))}`;
  const text = bounded(lines) + quote;
  const final =
    report.kind === 'finished' || report.kind === 'answered' || report.kind === 'failed' || report.kind === 'cancelled';
  // The answer itself goes in the reply only: the status message keeps to one short line.
  const status = plain.quote === undefined ? text : head;
  return { state: plain.state, status, ...(final ? { final: text } : {}) };
}
