import type { ChatService } from '@codefleet/chat';
import { CodefleetError } from '@codefleet/core';
import type { Runtime } from '../runtime.js';

/** Starts the Slack producer (Socket Mode or HTTP events). */
export async function startSlack(_rt: Runtime, _chat: ChatService): Promise<{ where: string; close(): Promise<void> }> {
  throw new CodefleetError('invalid_config', 'the Slack producer is not available in this build');
}
