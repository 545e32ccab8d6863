import type { ChatOutcome } from '@codefleet/chat';
import { graphemePrefix } from '@codefleet/core';
import { plainReport, type Report, type ReportState } from '@codefleet/requester';
import { bounded, codeBlock, escapeMrkdwn } from './mrkdwn.js';

// Every word of a request's one status message, in one module: the producer's (received,
// what the chat service decided: queued, a reply, a question) and the requester's (the
// job's progress and its end). Two renderers once showed "Queued" twice in two wordings.

/** Prefix of the action ids of the repository buttons. */
export const repoActionPrefix = 'codefleet_repo_';

/** What the status message says as soon as a request arrives; `note` is appended. */
export function receivedStatus(note = ''): string {
  return `:eyes: Looking at your request…${note}`;
}

/** What the status message says to a DM or mention with a file and no text. */
export const filesOnlyText =
  "I can't read attached files or images: I only read the text of a message. Send the request as text (paste the part that matters), with `repo=owner/name` if the channel has no repository.";

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

/** What the status message says about an outcome (and its buttons, for `ask_repo`). */
export function renderOutcome(outcome: ChatOutcome): { text: string; blocks?: unknown[] } {
  switch (outcome.kind) {
    case 'enqueued':
      return {
        text: outcome.deduplicated
          ? `:eyes: Already on it: job ${escapeMrkdwn(outcome.jobId)} (${escapeMrkdwn(outcome.repo)}).`
          : `:inbox_tray: Queued as job ${escapeMrkdwn(outcome.jobId)} for ${escapeMrkdwn(outcome.repo)} (route ${outcome.route.name}). I will update this message as it runs.`,
      };
    case 'reply':
      return { text: escapeMrkdwn(bounded(outcome.text)) };
    case 'refused':
      return { text: `:no_entry_sign: ${escapeMrkdwn(bounded(outcome.text))}` };
    case 'deferred':
      return {
        text: `:hourglass_flowing_sand: Job ${escapeMrkdwn(outcome.jobId)} of this thread is still queued or running. I kept your request: it will start as a follow-up on the same branch when job ${escapeMrkdwn(outcome.jobId)} ends, and I will update this message then.`,
      };
    case 'ask_repo': {
      if (outcome.choices.length === 0)
        return { text: 'Which repository should I work on? Mention me again with `repo=owner/name`.' };
      const question = 'Which repository should I work on?';
      const buttons = outcome.choices.slice(0, 25).map((choice, index) => ({
        type: 'button',
        action_id: `${repoActionPrefix}${index}`,
        value: choice.slice(0, 2_000),
        text: { type: 'plain_text', text: graphemePrefix(choice, 75), emoji: false },
      }));
      return {
        text: question,
        blocks: [
          { type: 'section', text: { type: 'mrkdwn', text: question } },
          { type: 'actions', block_id: 'codefleet_repo', elements: buttons },
        ],
      };
    }
  }
}
