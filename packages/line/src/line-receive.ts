import type { Inbox } from '@codefleet/chat';
import { classify } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { addressed, eventsOf, readEvent } from './events.js';
import { verifyLineSignature } from './signature.js';

/** An answer to LINE: the status and the JSON body. */
export interface LineAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** Records each text message addressed to the bot; throws when one cannot be recorded (nothing is answered then). */
async function recordEvents(
  inbox: Pick<Inbox, 'record'>,
  groupPrefix: string | undefined,
  events: unknown[],
  log: Logger,
) {
  for (const raw of events) {
    const reading = readEvent(raw);
    const message = reading.kind === 'text' ? addressed(reading.message, groupPrefix) : undefined;
    if (message === undefined) {
      const reason =
        reading.kind === 'ignore' ? reading.reason : `a ${reading.message.chat} message not addressed to the bot`;
      log.debug(
        { event: 'line.ignored', type: reading.kind === 'ignore' ? reading.type : 'message', reason },
        'LINE event ignored',
      );
      continue;
    }
    await inbox.record(message.webhookEventId, message);
  }
}

/**
 * One delivery whose raw body is `raw`: the `x-line-signature` is checked over those bytes
 * before anything is parsed (missing or forged: 401, nothing happens); then each addressed
 * text message is recorded in the inbox before the 200. When a record cannot be written the
 * answer is 500 and LINE delivers again.
 */
export async function receiveLineDelivery(
  deps: { secret: string; groupPrefix: string | undefined; inbox: Pick<Inbox, 'record'>; log: Logger },
  raw: Buffer,
  signature: string | undefined,
): Promise<LineAnswer> {
  const { log } = deps;
  if (!verifyLineSignature(deps.secret, raw, signature)) return { status: 401, body: { error: 'bad signature' } };
  let events: unknown[];
  try {
    events = eventsOf(JSON.parse(raw.toString('utf8')));
  } catch (error) {
    return { status: 400, body: { error: error instanceof Error ? error.message : 'not JSON' } };
  }
  try {
    await recordEvents(deps.inbox, deps.groupPrefix, events, log);
  } catch (error) {
    const c = classify(error);
    log.error(
      { err: error, event: 'line.record_failed', code: c.code },
      'could not record a LINE event; answered 500 so LINE delivers it again',
    );
    return { status: 500, body: { error: c.code } };
  }
  return { status: 200, body: {} };
}
