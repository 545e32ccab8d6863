import {
  displayHost,
  httpModelError,
  ModelCallError,
  transportModelError,
  type ChatMessage,
  type ChatModel,
  type ChatOptions,
  type ChatReply,
} from './chat-model.js';
import { callUnderPolicy, checkedModelCallPolicy, type ModelCallPolicy } from './model-call-policy.js';

/** How to reach a model behind the Anthropic Messages API. */
export interface AnthropicModelOptions {
  /** API origin without the version, e.g. `https://api.anthropic.com` or a gateway. */
  baseUrl: string;
  model: string;
  /** Sent as `x-api-key`. */
  apiKey?: string;
  temperature?: number;
  /** Request timeout and retries; unset ones take the defaults of model-call-policy.ts. */
  policy?: Partial<ModelCallPolicy>;
}

/**
 * The API requires `max_tokens`; when the caller sets no cap this one is sent. It bounds a
 * single reply (a plan and a patch), well under what current models allow.
 */
export const defaultAnthropicMaxTokens = 8192;

/** The API version header value this client speaks. */
const anthropicVersion = '2023-06-01';

interface MessageBody {
  content?: { type?: unknown; text?: unknown }[];
  usage?: {
    input_tokens?: unknown;
    output_tokens?: unknown;
    cache_read_input_tokens?: unknown;
    cache_creation_input_tokens?: unknown;
  };
}

const tokenCount = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;

/**
 * The Anthropic provider (`POST {baseUrl}/v1/messages`, non-streaming). Plain `fetch`: the
 * key travels in the `x-api-key` header only, with `anthropic-version`. System messages
 * go in the top-level `system` field (the API has no system role); the reply is the text
 * of its text blocks, token counts from `usage` (cache reads and writes count as prompt).
 * Errors map like the other providers': 401/403 `unauthorized`, 404 `model_not_found`,
 * 429, 5xx and 529 (overloaded) `server`, which the model-call policy retries.
 */
export function createAnthropicModel(options: AnthropicModelOptions): ChatModel {
  const url = `${options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/messages`;
  const host = displayHost(options.baseUrl);
  const policy = checkedModelCallPolicy(options.policy);
  return {
    label: `anthropic ${options.model}`,
    provider: 'anthropic',
    model: options.model,
    chat: (messages, call) =>
      callUnderPolicy(policy, `Anthropic API at ${host}`, call, (signal) =>
        chatOnce(options, url, host, messages, { ...call, signal }),
      ),
  };
}

/** One request of {@link createAnthropicModel}. */
async function chatOnce(
  options: AnthropicModelOptions,
  url: string,
  host: string,
  messages: readonly ChatMessage[],
  call: ChatOptions,
): Promise<ChatReply> {
  const system = messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      signal: call.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'anthropic-version': anthropicVersion,
        ...(options.apiKey === undefined ? {} : { 'x-api-key': options.apiKey }),
      },
      body: JSON.stringify({
        model: options.model,
        max_tokens: call.maxTokens ?? defaultAnthropicMaxTokens,
        ...(system === '' ? {} : { system }),
        messages: mergeTurns(messages.filter((m) => m.role !== 'system')),
        temperature: options.temperature ?? 0.2,
        stream: false,
      }),
    });
    text = await response.text();
  } catch (error) {
    throw transportModelError('Anthropic API', host, error, call.signal);
  }
  if (!response.ok)
    throw httpModelError('Anthropic API', response.status, errorText(text), options.model, response.headers);
  let body: MessageBody;
  try {
    body = JSON.parse(text) as MessageBody;
  } catch {
    throw new ModelCallError('bad_response', `Anthropic API at ${host} answered with something that is not JSON`);
  }
  if (!Array.isArray(body.content))
    throw new ModelCallError('bad_response', `Anthropic API at ${host} answered without content`);
  const content = body.content
    .filter((b) => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('');
  call.onText?.(content);
  const usage = body.usage ?? {};
  return {
    content,
    promptTokens:
      tokenCount(usage.input_tokens) +
      tokenCount(usage.cache_read_input_tokens) +
      tokenCount(usage.cache_creation_input_tokens),
    completionTokens: tokenCount(usage.output_tokens),
  };
}

/** User and assistant turns, consecutive ones of the same role joined: the API wants them alternating. */
function mergeTurns(messages: readonly ChatMessage[]): { role: 'user' | 'assistant'; content: string }[] {
  const turns: { role: 'user' | 'assistant'; content: string }[] = [];
  for (const m of messages) {
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const last = turns.at(-1);
    if (last?.role === role) last.content += `\n\n${m.content}`;
    else turns.push({ role, content: m.content });
  }
  return turns;
}

/** The `error.message` of an Anthropic error body (`{type: "error", error: {type, message}}`), else the raw text. */
function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { type?: unknown; message?: unknown } };
    const { type, message } = parsed.error ?? {};
    if (typeof message === 'string') return typeof type === 'string' ? `${type}: ${message}` : message;
  } catch {
    // not JSON: use the text
  }
  return text;
}
