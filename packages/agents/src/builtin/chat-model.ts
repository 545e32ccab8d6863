import { rateLimitDelay } from '@codefleet/core';

/** One message of a chat with a model. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Limits of one model call. */
export interface ChatOptions {
  /** Aborts the HTTP request (timeout, cancel, lease lost); nothing is retried once it has. */
  signal: AbortSignal;
  /** When `signal` aborts by itself (epoch ms), if it does: no retry waits past it. */
  deadline?: number;
  /** Upper bound on generated tokens; unset: the server's default. */
  maxTokens?: number;
  /** Receives generated text as it arrives (streaming providers), for live logs. */
  onText?: (text: string) => void;
}

/** The answer of one model call and what it cost, as the server counted it. */
export interface ChatReply {
  content: string;
  promptTokens: number;
  completionTokens: number;
}

/**
 * The provider-neutral port of the built-in agent: one chat completion. Ollama's native API
 * and OpenAI-compatible endpoints (vLLM, LM Studio, DeepSeek, OpenAI) implement it.
 *
 * It promises: the request is aborted when `signal` aborts; each HTTP request has its own
 * timeout and transient failures are retried, as the model-call policy says (one retry layer:
 * model-call-policy.ts); failures reject with a {@link ModelCallError} whose `kind` says what
 * went wrong; an API key, when there is one, travels in a header and never appears in a URL,
 * a message or an error.
 *
 * It leaves out prompt building and token budgets: the agent and the pipeline own those.
 */
export interface ChatModel {
  /** `provider model`, for messages and run records. */
  readonly label: string;
  /** `ollama`, `openai` or `anthropic`: the API it speaks, for the model-call record. */
  readonly provider: string;
  /** The model asked for, for the model-call record and its price. */
  readonly model: string;
  chat(messages: readonly ChatMessage[], options: ChatOptions): Promise<ChatReply>;
}

/**
 * Why a model call failed:
 * - `unreachable`: no connection (refused, DNS, reset) — the server is down or elsewhere;
 * - `model_not_found`: the server answered but does not have the model;
 * - `unauthorized`: the server refused the API key (401/403);
 * - `server`: any other HTTP error status, or an error reported mid-stream;
 * - `bad_response`: the server answered with something that is not a chat reply;
 * - `timeout`: one request had no complete answer within the policy's request timeout;
 * - `aborted`: the caller's signal aborted the request (the run's timeout or a cancel).
 */
export type ModelErrorKind =
  'unreachable' | 'model_not_found' | 'unauthorized' | 'server' | 'bad_response' | 'timeout' | 'aborted';

/** A failed model call; the message is safe to record (no key, no prompt). */
export class ModelCallError extends Error {
  readonly kind: ModelErrorKind;
  readonly status?: number;
  /** How long the server asked to wait before trying again (Retry-After), when it said. */
  readonly retryAfterMs?: number;

  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ModelCallError';
    this.kind = kind;
    if (options.status !== undefined) this.status = options.status;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

/** The `kind` of a {@link ModelCallError} (matched by name, so a copy from another realm counts). */
export function modelErrorKind(error: unknown): ModelErrorKind | undefined {
  if (typeof error !== 'object' || error === null || (error as { name?: unknown }).name !== 'ModelCallError')
    return undefined;
  return (error as ModelCallError).kind;
}

/**
 * Maps an HTTP error status and the server's error text to a {@link ModelCallError};
 * `headers` give the Retry-After the model-call policy honours.
 */
export function httpModelError(
  provider: string,
  status: number,
  text: string,
  model: string,
  headers?: Headers,
): ModelCallError {
  const said = text.trim().slice(0, 300);
  const retryAfterMs = headers === undefined ? undefined : rateLimitDelay(headers, Date.now());
  if (status === 401 || status === 403)
    return new ModelCallError(
      'unauthorized',
      `${provider} refused the request (HTTP ${status}): check the API key variable`,
      { status },
    );
  if (status === 404 && /model|not found/i.test(said)) {
    return new ModelCallError(
      'model_not_found',
      `${provider} does not have model "${model}" (HTTP 404${said ? `: ${said}` : ''})`,
      { status },
    );
  }
  return new ModelCallError('server', `${provider} answered HTTP ${status}${said ? `: ${said}` : ''}`, {
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/** Maps a failed `fetch` (no HTTP status) to a {@link ModelCallError}. */
export function transportModelError(
  provider: string,
  host: string,
  error: unknown,
  signal: AbortSignal,
): ModelCallError {
  if (error instanceof ModelCallError) return error;
  if (signal.aborted) return new ModelCallError('aborted', `${provider} call aborted`, { cause: error });
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const why = code ?? (error instanceof Error ? error.message : String(error));
  return new ModelCallError('unreachable', `${provider} at ${host} is unreachable (${why})`, { cause: error });
}

/** `host` for messages: scheme, host and path only, never user info or a query. */
export function displayHost(host: string): string {
  try {
    const url = new URL(host);
    return `${url.origin}${url.pathname.replace(/\/$/, '')}`;
  } catch {
    return '(invalid host URL)';
  }
}
