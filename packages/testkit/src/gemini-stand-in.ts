import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A function call the scripted model makes: one of the tools the client declared (`write_file`, `replace`, `run_shell_command`, …). */
export interface GeminiFunctionCall {
  name: string;
  args: Record<string, unknown>;
}

/** The canned errors of the real API, by what they mean; each is sent with Google's status, code and body. */
export type GeminiErrorKind =
  'api-key-invalid' | 'unauthenticated' | 'permission-denied' | 'resource-exhausted' | 'internal' | 'unavailable';

/** An HTTP error answer: one of the real API's canned errors, or any status and message. */
export type GeminiErrorReply = GeminiErrorKind | { status: number; code: string; message: string; reason?: string };

/**
 * One scripted answer to the next agent turn (a request that declares tools):
 * - `{ text?, functionCalls?, … }`: a model reply with text and/or function calls, usage
 *   in `usageMetadata` (given counts, else estimated from the text), `finishReason` STOP;
 * - `{ error }`: an HTTP error with the real API's error body;
 * - `{ streamFailure: true }`: a stream that sends its first chunk and then breaks off;
 * - `{ hang: true }`: never answers (until the client gives up or the stand-in closes).
 */
export type GeminiTurn =
  | {
      text?: string;
      functionCalls?: GeminiFunctionCall[];
      promptTokens?: number;
      completionTokens?: number;
      finishReason?: string;
    }
  | { error: GeminiErrorReply }
  | { streamFailure: true; text?: string }
  | { hang: true };

/** A request as the stand-in received it. */
export interface GeminiRequest {
  method: string;
  /** Path and query as sent (`/v1beta/models/<model>:streamGenerateContent?alt=sse`): tests assert no key travels in it. */
  url: string;
  /** The model in the path; empty for other routes. */
  model: string;
  /** The method after the colon: `generateContent`, `streamGenerateContent`, `countTokens`, …; empty for other routes. */
  rpc: string;
  /** `turn`: an agent turn (declares tools), answered from the script; `utility`: another call (routing, checks), answered from its JSON schema. */
  kind: 'turn' | 'utility' | 'other';
  /** The `x-goog-api-key` header as sent. */
  apiKey?: string;
  userAgent?: string;
  /** Names of the function declarations the request carried. */
  tools: string[];
  body: Record<string, unknown>;
}

/**
 * A STAND-IN for the Gemini API (generativelanguage.googleapis.com), for tests only: an
 * HTTP server on 127.0.0.1 (random port) speaking the part of the real API the Gemini CLI
 * uses through `GOOGLE_GEMINI_BASE_URL` — `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`
 * (server-sent events, `data: <GenerateContentResponse>` per chunk), `:generateContent`
 * and `:countTokens`. It runs no model. Agent turns (requests that declare tools) take the
 * next {@link GeminiTurn} in order: candidates with text and `functionCall` parts,
 * `finishReason`, `usageMetadata` and `modelVersion` as the real API sends them. Other
 * calls (the CLI's model router asks for a JSON complexity score) are answered with a value
 * shaped by the request's `responseJsonSchema`. Errors use Google's error body
 * (`{error: {code, message, status, details}}`), e.g. 400 INVALID_ARGUMENT with reason
 * API_KEY_INVALID for a refused key. Every request is recorded.
 */
export interface GeminiStandIn {
  /** `http://127.0.0.1:<port>`: the value for `GOOGLE_GEMINI_BASE_URL`. */
  readonly url: string;
  /** Adds turns to the end of the script. */
  reply(...turns: GeminiTurn[]): void;
  /** Every request received so far, in order. */
  readonly requests: GeminiRequest[];
  /** Turns not used yet. */
  readonly pending: number;
  close(): Promise<void>;
}

/** Options for {@link startGeminiStandIn}. */
export interface GeminiStandInOptions {
  turns?: GeminiTurn[];
  /** Answer every request (turns, utility calls, counts) with this error: a refused key refuses everything. */
  failEvery?: GeminiErrorReply;
  /** Tokens reported for a utility call. Default 10 prompt, 5 completion. */
  utilityTokens?: { prompt: number; completion: number };
}

const canned: Record<GeminiErrorKind, { status: number; code: string; message: string; reason?: string }> = {
  'api-key-invalid': {
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'API key not valid. Please pass a valid API key.',
    reason: 'API_KEY_INVALID',
  },
  unauthenticated: {
    status: 401,
    code: 'UNAUTHENTICATED',
    message:
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
  },
  'permission-denied': {
    status: 403,
    code: 'PERMISSION_DENIED',
    message: 'Permission denied: Consumer has been suspended.',
    reason: 'CONSUMER_SUSPENDED',
  },
  'resource-exhausted': {
    status: 429,
    code: 'RESOURCE_EXHAUSTED',
    message: 'Resource has been exhausted (e.g. check quota).',
  },
  internal: {
    status: 500,
    code: 'INTERNAL',
    message:
      'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  },
  unavailable: { status: 503, code: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' },
};

/** Google's JSON error body (google.rpc.Status), with an ErrorInfo detail when there is a reason. */
export function geminiErrorBody(reply: GeminiErrorReply): { status: number; body: unknown } {
  const e = typeof reply === 'string' ? canned[reply] : reply;
  const details =
    e.reason === undefined
      ? []
      : [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: e.reason,
            domain: 'googleapis.com',
            metadata: { service: 'generativelanguage.googleapis.com' },
          },
        ];
  return {
    status: e.status,
    body: {
      error: { code: e.status, message: e.message, status: e.code, ...(details.length === 0 ? {} : { details }) },
    },
  };
}

const estimate = (text: string) => Math.max(1, Math.ceil(text.length / 4));

/** A value that satisfies `schema` (OpenAPI or JSON Schema, as the SDK sends it): what a utility call asked for. */
function valueFor(schema: unknown, name = ''): unknown {
  if (typeof schema !== 'object' || schema === null) return 'stand-in';
  const s = schema as {
    type?: unknown;
    properties?: Record<string, unknown>;
    items?: unknown;
    enum?: unknown[];
    minimum?: number;
  };
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  switch (String(s.type ?? 'string').toLowerCase()) {
    case 'object':
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([key, value]) => [key, valueFor(value, key)]));
    case 'array':
      return [];
    case 'integer':
    case 'number':
      // The router reads a complexity score from 1 to 100: a low one keeps the default model.
      return s.minimum ?? 10;
    case 'boolean':
      return false;
    default:
      return `stand-in ${name}`.trim();
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
};

function toolNames(body: Record<string, unknown>): string[] {
  const tools = Array.isArray(body.tools) ? (body.tools as { functionDeclarations?: { name?: unknown }[] }[]) : [];
  return tools.flatMap((tool) => (tool.functionDeclarations ?? []).map((declaration) => String(declaration.name)));
}

/** Starts the stand-in; see {@link GeminiStandIn}. */
export async function startGeminiStandIn(options: GeminiStandInOptions = {}): Promise<GeminiStandIn> {
  const script: GeminiTurn[] = [...(options.turns ?? [])];
  const requests: GeminiRequest[] = [];
  const utilityTokens = options.utilityTokens ?? { prompt: 10, completion: 5 };
  let responses = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    const body = req.method === 'POST' ? await readJson(req) : {};
    const match = /^\/v1(?:beta|alpha)?\/models\/([^/:?]+):([A-Za-z]+)/.exec(url);
    const tools = toolNames(body);
    const rpc = match?.[2] ?? '';
    const kind = match === null ? 'other' : rpc.endsWith('enerateContent') && tools.length > 0 ? 'turn' : 'utility';
    const key = req.headers['x-goog-api-key'];
    requests.push({
      method: req.method ?? '',
      url,
      model: match?.[1] ?? '',
      rpc,
      kind,
      tools,
      body,
      ...(typeof key === 'string' ? { apiKey: key } : {}),
      ...(req.headers['user-agent'] === undefined ? {} : { userAgent: req.headers['user-agent'] }),
    });
    const fail = (reply: GeminiErrorReply) => {
      const { status, body: errorBody } = geminiErrorBody(reply);
      json(res, status, errorBody);
    };
    if (options.failEvery !== undefined) return fail(options.failEvery);
    if (match === null || req.method !== 'POST')
      return fail({ status: 404, code: 'NOT_FOUND', message: `stand-in: no route ${req.method ?? ''} ${url}` });
    const model = match[1] ?? '';
    if (rpc === 'countTokens') return json(res, 200, { totalTokens: estimate(JSON.stringify(body.contents ?? [])) });
    const stream = rpc === 'streamGenerateContent';
    if (!stream && rpc !== 'generateContent')
      return fail({ status: 404, code: 'NOT_FOUND', message: `stand-in: no method ${rpc}` });

    let turn: GeminiTurn;
    if (kind === 'turn') {
      const next = script.shift();
      if (next === undefined)
        return fail({ status: 500, code: 'INTERNAL', message: 'stand-in: no scripted turn left' });
      turn = next;
    } else {
      const config = (body.generationConfig ?? {}) as { responseJsonSchema?: unknown; responseSchema?: unknown };
      const schema = config.responseJsonSchema ?? config.responseSchema;
      turn = {
        text: schema === undefined ? 'stand-in' : JSON.stringify(valueFor(schema)),
        promptTokens: utilityTokens.prompt,
        completionTokens: utilityTokens.completion,
      };
    }
    if ('hang' in turn) return; // answered by nobody; the socket closes with the client or the stand-in
    if ('error' in turn) return fail(turn.error);
    responses += 1;
    const responseId = `stand-in-${responses}`;
    const promptText = JSON.stringify(body.contents ?? []);
    if ('streamFailure' in turn) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = {
        candidates: [{ content: { role: 'model', parts: [{ text: turn.text ?? 'Working on' }] }, index: 0 }],
        modelVersion: model,
        responseId,
      };
      res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
      // Broken off mid-stream, as a dropped connection does: no final chunk, no clean end.
      setTimeout(() => res.destroy(), 50);
      return;
    }
    const text = turn.text ?? '';
    const calls = turn.functionCalls ?? [];
    const callParts = calls.map((call) => ({ functionCall: { name: call.name, args: call.args } }));
    const promptTokenCount = turn.promptTokens ?? estimate(promptText);
    const candidatesTokenCount = turn.completionTokens ?? estimate(text + JSON.stringify(calls));
    const usageMetadata = {
      promptTokenCount,
      candidatesTokenCount,
      totalTokenCount: promptTokenCount + candidatesTokenCount,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: promptTokenCount }],
    };
    const candidate = (parts: unknown[], finishReason?: string) => ({
      content: { role: 'model', parts },
      ...(finishReason === undefined ? {} : { finishReason }),
      index: 0,
    });
    const finishReason = turn.finishReason ?? 'STOP';
    if (!stream) {
      const parts = [...(text === '' ? [] : [{ text }]), ...callParts];
      return json(res, 200, {
        candidates: [candidate(parts, finishReason)],
        usageMetadata,
        modelVersion: model,
        responseId,
      });
    }
    // As tokens arrive: the first half of the text, then the rest with the function calls,
    // the finish reason and the final usage (earlier chunks carry the prompt count only).
    const half = text.length > 1 ? Math.ceil(text.length / 2) : 0;
    const chunks: unknown[] = [];
    if (half > 0) {
      chunks.push({
        candidates: [candidate([{ text: text.slice(0, half) }])],
        usageMetadata: { promptTokenCount, totalTokenCount: promptTokenCount },
        modelVersion: model,
        responseId,
      });
    }
    const rest = text.slice(half);
    chunks.push({
      candidates: [candidate([...(rest === '' ? [] : [{ text: rest }]), ...callParts], finishReason)],
      usageMetadata,
      modelVersion: model,
      responseId,
    });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    res.end();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        json(res, 400, {
          error: {
            code: 400,
            message: `stand-in: ${error instanceof Error ? error.message : String(error)}`,
            status: 'INVALID_ARGUMENT',
          },
        });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get pending() {
      return script.length;
    },
    reply: (...turns) => void script.push(...turns),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
