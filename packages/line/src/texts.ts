import type { ChatOutcome } from '@codefleet/chat';
import { truncateHead } from '@codefleet/core';
import { plainReport, type Report } from '@codefleet/requester';
import { maxLineTextChars } from './client.js';

// LINE shows text as typed: no Markdown, no mentions from plain text, links only as the
// app auto-detects them. Everything sent is plain text, bounded to one message.

/** The acknowledgement of a message, sent with its reply token. */
export function outcomeText(outcome: ChatOutcome): string {
  switch (outcome.kind) {
    case 'enqueued':
      return bounded(
        outcome.deduplicated
          ? `Already on it: job ${outcome.jobId} (${outcome.repo}). The result will be sent here.`
          : `Queued as job ${outcome.jobId} (${outcome.route.name}, ${outcome.repo}). The result will be sent here.`,
      );
    case 'reply':
    case 'refused':
      return bounded(outcome.text);
    case 'deferred':
      // Only a producer that keeps follow-ups is answered so; this one keeps none.
      return bounded(
        `Job ${outcome.jobId} of this conversation is still queued or running. Send this message again when it has finished.`,
      );
    case 'ask_repo':
      return bounded(
        [
          'Which repository is this about? Send the message again with repo=owner/name.',
          ...(outcome.choices.length === 0
            ? []
            : ['For example:', ...outcome.choices.slice(0, 10).map((c) => `repo=${c}`)]),
        ].join('\n'),
      );
  }
}

/** A report as one LINE text message. */
export function reportText(report: Report): string {
  const plain = plainReport(report);
  return bounded(
    [plain.headline, ...plain.details, ...(plain.quote === undefined ? [] : ['', plain.quote])].join('\n'),
  );
}

function bounded(text: string): string {
  return truncateHead(text, maxLineTextChars);
}
