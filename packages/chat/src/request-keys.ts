import { requestKeyFamily } from '@codefleet/store';
import type { ChatMessage } from './port.js';

// The chat service's request keys (the run store's `bindRequest`/`lookupRequest`): every one
// it writes is made here.

const messageKeys = requestKeyFamily<[platform: string, channel: string, messageId: string]>('chat', 'msg', {
  formerly: 'msg',
});
const threadKeys = requestKeyFamily<[platform: string, channel: string, thread: string]>('chat', 'thread', {
  formerly: 'thread',
});

/** The request key of one message: what every delivery of it shares. */
export const messageKey = (m: Pick<ChatMessage, 'platform' | 'channel' | 'messageId'>) =>
  messageKeys(m.platform, m.channel, m.messageId);
/** The request key of a conversation: the job a follow-up in it continues. */
export const threadKey = (m: Pick<ChatMessage, 'platform' | 'channel' | 'thread'>) =>
  threadKeys(m.platform, m.channel, m.thread);
/** The request key of a job's chat facts (its requester and thread, for OPS and follow-ups). */
export const jobMetaKey = requestKeyFamily<[jobId: string]>('chat', 'job', { formerly: 'job' });
