import { graphemePrefix } from '@codefleet/core';

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
