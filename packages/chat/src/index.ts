// Public API of @codefleet/chat: the chat service's message and outcome types (the router and
// the routes land here next).
export type { ChatMessage, ChatOutcome, ChatService } from './port.js';
