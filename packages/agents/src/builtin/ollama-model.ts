import { Ollama } from 'ollama';
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

/** How to reach a model on an Ollama server. */
export interface OllamaModelOptions {
  /** Server URL, e.g. `http://127.0.0.1:11434`. */
  host: string;
  model: string;
  /** Context window asked for (`num_ctx`): Ollama's small default would cut a long prompt silently. */
  contextTokens?: number;
  /** Sent as `Authorization: Bearer …` (a server behind an authenticating proxy, Ollama's cloud). */
  apiKey?: string;
  /** Sampling temperature; low by default, code edits want little creativity. */
  temperature?: number;
  /** Request timeout and retries; unset ones take the defaults of model-call-policy.ts. */
  policy?: Partial<ModelCallPolicy>;
}

/**
 * A client of the `ollama` package whose every request also stops when `signal` aborts. The
 * client's errors carry no headers, so the last response's are kept in `seen` (Retry-After).
 */
function clientFor(options: OllamaModelOptions, signal?: AbortSignal, seen: { headers?: Headers } = {}): Ollama {
  const fetchWithSignal: typeof fetch = async (input, init) => {
    const response = await fetch(input, {
      ...init,
      ...(signal === undefined ? {} : { signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal }),
    });
    seen.headers = response.headers;
    return response;
  };
  return new Ollama({
    host: options.host,
    fetch: fetchWithSignal,
    ...(options.apiKey === undefined ? {} : { headers: { Authorization: `Bearer ${options.apiKey}` } }),
  });
}

/** Turns whatever the `ollama` client threw into a {@link ModelCallError}. */
function ollamaError(
  error: unknown,
  options: OllamaModelOptions,
  signal: AbortSignal,
  headers?: Headers,
): ModelCallError {
  if (signal.aborted) return new ModelCallError('aborted', 'Ollama call aborted', { cause: error });
  // The client's ResponseError carries the HTTP status and the server's `error` text.
  const status = (error as { status_code?: unknown } | undefined)?.status_code;
  if (typeof status === 'number')
    return httpModelError('Ollama', status, (error as Error).message, options.model, headers);
  if (error instanceof Error && error.name !== 'TypeError' && !(error as { cause?: unknown }).cause) {
    // An `error` line in the stream, or a stream that ended without `done`.
    return new ModelCallError('server', `Ollama failed mid-reply: ${error.message.slice(0, 300)}`, { cause: error });
  }
  return transportModelError('Ollama', displayHost(options.host), error, signal);
}

/**
 * The Ollama provider: `POST /api/chat` through the official `ollama` JS client, streamed
 * so a long generation shows progress and an abort stops it at once. Token counts come
 * from the final chunk (`prompt_eval_count`, `eval_count`). Each request goes through the
 * model-call policy (request timeout, retries).
 */
export function createOllamaModel(options: OllamaModelOptions): ChatModel {
  const policy = checkedModelCallPolicy(options.policy);
  return {
    label: `ollama ${options.model}`,
    provider: 'ollama',
    model: options.model,
    chat: (messages, call) =>
      callUnderPolicy(policy, `Ollama at ${displayHost(options.host)}`, call, (signal) =>
        chatOnce(options, messages, { ...call, signal }),
      ),
  };
}

/** One streamed request of {@link createOllamaModel}. */
async function chatOnce(
  options: OllamaModelOptions,
  messages: readonly ChatMessage[],
  call: ChatOptions,
): Promise<ChatReply> {
  const seen: { headers?: Headers } = {};
  const client = clientFor(options, call.signal, seen);
  let content = '';
  let promptTokens = 0;
  let completionTokens = 0;
  try {
    const stream = await client.chat({
      model: options.model,
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      stream: true,
      options: {
        temperature: options.temperature ?? 0.2,
        ...(options.contextTokens === undefined ? {} : { num_ctx: options.contextTokens }),
        ...(call.maxTokens === undefined ? {} : { num_predict: call.maxTokens }),
      },
    });
    const stop = () => stream.abort();
    call.signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const part of stream) {
        const text = part.message?.content ?? '';
        if (text !== '') {
          content += text;
          call.onText?.(text);
        }
        if (part.done) {
          promptTokens = part.prompt_eval_count ?? 0;
          completionTokens = part.eval_count ?? 0;
        }
      }
    } finally {
      call.signal.removeEventListener('abort', stop);
    }
  } catch (error) {
    throw ollamaError(error, options, call.signal, seen.headers);
  }
  return { content, promptTokens, completionTokens };
}

/** What a short look at an Ollama server found. */
export type OllamaProbe =
  | { status: 'ready'; version: string }
  | { status: 'model_missing'; version: string; models: string[] }
  | { status: 'unreachable'; detail: string };

/**
 * Asks an Ollama server for its version and its models (`GET /api/version`, `/api/tags`)
 * within `timeoutMs`: whether the built-in agent could run on it now. Never throws.
 */
export async function probeOllama(options: { host: string; model: string; timeoutMs?: number }): Promise<OllamaProbe> {
  const signal = AbortSignal.timeout(options.timeoutMs ?? 1_500);
  const client = clientFor({ host: options.host, model: options.model }, signal);
  try {
    const { version } = await client.version();
    const { models } = await client.list();
    const names = models.map((m) => m.name);
    // `qwen2.5-coder` means `qwen2.5-coder:latest` to Ollama.
    const wanted = options.model.includes(':') ? options.model : `${options.model}:latest`;
    return names.includes(wanted) || names.includes(options.model)
      ? { status: 'ready', version }
      : { status: 'model_missing', version, models: names };
  } catch (error) {
    const failure = ollamaError(error, { host: options.host, model: options.model }, signal);
    return {
      status: 'unreachable',
      detail: signal.aborted
        ? `no answer from ${displayHost(options.host)} within ${options.timeoutMs ?? 1_500} ms`
        : failure.message,
    };
  }
}
