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

/** How to reach a model behind an OpenAI-compatible API. */
export interface OpenAiModelOptions {
  /** API base URL up to the version, e.g. `https://api.openai.com/v1`, `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer …`; local servers (vLLM, LM Studio) often need none. */
  apiKey?: string;
  temperature?: number;
  /** Request timeout and retries; unset ones take the defaults of model-call-policy.ts. */
  policy?: Partial<ModelCallPolicy>;
}

interface CompletionBody {
  choices?: { message?: { content?: unknown } }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

const tokenCount = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;

/**
 * The OpenAI-compatible provider (`POST {baseUrl}/chat/completions`), which vLLM, LM Studio,
 * DeepSeek, OpenAI and Ollama's `/v1` all speak. Plain `fetch`, no SDK: one request, one
 * JSON answer, token counts from `usage`. The key goes in the Authorization header only.
 * Each request goes through the model-call policy (request timeout, retries).
 */
export function createOpenAiModel(options: OpenAiModelOptions): ChatModel {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const host = displayHost(options.baseUrl);
  const policy = checkedModelCallPolicy(options.policy);
  return {
    label: `openai ${options.model}`,
    provider: 'openai',
    model: options.model,
    chat: (messages, call) =>
      callUnderPolicy(policy, `OpenAI-compatible server at ${host}`, call, (signal) =>
        chatOnce(options, url, host, messages, { ...call, signal }),
      ),
  };
}

/** One request of {@link createOpenAiModel}. */
async function chatOnce(
  options: OpenAiModelOptions,
  url: string,
  host: string,
  messages: readonly ChatMessage[],
  call: ChatOptions,
): Promise<ChatReply> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      signal: call.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
      },
      body: JSON.stringify({
        model: options.model,
        messages: messages.map((m) => ({ role: m.role, content: m.content })),
        stream: false,
        temperature: options.temperature ?? 0.2,
        ...(call.maxTokens === undefined ? {} : { max_tokens: call.maxTokens }),
      }),
    });
    text = await response.text();
  } catch (error) {
    throw transportModelError('OpenAI-compatible server', host, error, call.signal);
  }
  if (!response.ok) {
    throw httpModelError('OpenAI-compatible server', response.status, errorText(text), options.model, response.headers);
  }
  let body: CompletionBody;
  try {
    body = JSON.parse(text) as CompletionBody;
  } catch {
    throw new ModelCallError(
      'bad_response',
      `OpenAI-compatible server at ${host} answered with something that is not JSON`,
    );
  }
  const content = body.choices?.[0]?.message?.content;
  if (typeof content !== 'string') {
    throw new ModelCallError(
      'bad_response',
      `OpenAI-compatible server at ${host} answered without choices[0].message.content`,
    );
  }
  call.onText?.(content);
  return {
    content,
    promptTokens: tokenCount(body.usage?.prompt_tokens),
    completionTokens: tokenCount(body.usage?.completion_tokens),
  };
}

/** The `error.message` of an OpenAI-style error body, else the raw text. */
function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string };
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.error?.message === 'string') return parsed.error.message;
  } catch {
    // not JSON: use the text
  }
  return text;
}
