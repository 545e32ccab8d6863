import { requestKeyFamily } from '@codefleet/store';

// Slack's request keys (the run store's `bindRequest`/`lookupRequest`): every one the producer
// and the requester write is made here, in the `slack` namespace.

/** A delivered message, claimed once however often Slack delivers it. */
export const messageKey = requestKeyFamily<[channel: string, ts: string]>('slack', 'msg', { formerly: 'slack-msg' });
/** The question with buttons waiting for a click on the status message `statusTs`. */
export const questionKey = requestKeyFamily<[channel: string, statusTs: string]>('slack', 'ask', {
  formerly: 'slack-ask',
});
/** A repository button's click, claimed once. */
export const choiceKey = requestKeyFamily<[channel: string, statusTs: string]>('slack', 'choice', {
  formerly: 'slack-choice',
});
/** A job's status message (its ts). */
export const statusKey = requestKeyFamily<[jobId: string]>('slack', 'status', { formerly: 'slack-status' });
/** The reaction a job's request message carries now. */
export const markKey = requestKeyFamily<[jobId: string]>('slack', 'mark', { formerly: 'slack-mark' });
/** A job's final reply of one kind, posted once. */
export const finalKey = requestKeyFamily<[jobId: string, kind: string]>('slack', 'final', { formerly: 'slack-final' });
