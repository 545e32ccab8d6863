import { requestKeyFamily } from '@codefleet/store';

// The dashboard's request keys (the run store's `bindRequest`): every one it writes is made here.

/** A run retried from the dashboard: one new job per run, however often the button is pressed. */
export const retryKey = requestKeyFamily<[runId: string]>('dashboard', 'retry', { formerly: 'retry' });
