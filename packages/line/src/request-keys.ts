import { requestKeyFamily } from '@codefleet/store';

// LINE's request keys (the run store's `bindRequest`): every one it writes is made here.

/** A webhook event, claimed once however often LINE redelivers it. */
export const eventKey = requestKeyFamily<[webhookEventId: string]>('line', 'event');
