import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * One scripted answer of the stand-in, used by the next chat request (either API):
 * - a string: the assistant's content, with token counts estimated from the text;
 * - `{ content, promptTokens?, completionTokens? }`: the same with fixed counts;
 * - `{ status, error }`: an HTTP error with the server's error body;
 * - `{ hang: true }`: never answers (until the client gives up or the stand-in closes).
 */
export type ScriptedReply =
  | string
  | { content: string; promptTokens?: number; completionTokens?: number }
  | { status: number; error: string }
  | { hang: true };

/** A chat request as the stand-in received it. */
export interface RecordedChat {
  api: 'ollama' | 'openai';
  /** Path and query as sent: tests assert no key ever travels in it. */
  url: string;
  model: string;
  messages: { role: string; content: string }[];
  stream: boolean;
  /** Ollama `options` (num_ctx, num_predict, temperature), or the OpenAI fields. */
  options: Record<string, unknown>;
  /** The Authorization header as sent, when there was one. */
  authorization?: string;
}

/**
 * A STAND-IN for an Ollama server, for tests only: an HTTP server on 127.0.0.1 (random
 * port) that speaks the part of Ollama's real API the built-in agent and the official
 * `ollama` client use — `POST /api/chat` (streamed NDJSON by default, one JSON object with
 * `stream: false`), `GET /api/tags`, `GET /api/version`, `POST /api/show` — and the
 * OpenAI-compatible `POST /v1/chat/completions` Ollama also serves. It does not run a
 * model: chat requests take the next {@link ScriptedReply} in order, with token counts in
 * the real fields (`prompt_eval_count` / `eval_count`, `usage`). It records every chat
 * request so tests can assert what the prompt held and which headers were sent.
 */
export interface OllamaStandIn {
  /** `http://127.0.0.1:<port>`: the Ollama host. */
  readonly url: string;
  /** `http://127.0.0.1:<port>/v1`: the OpenAI-compatible API base. */
  readonly openAiBase: string;
  /** Adds replies to the end of the script. */
  reply(...replies: ScriptedReply[]): void;
  /** Chat requests received so far, in order. */
  readonly requests: RecordedChat[];
  /** Replies not used yet. */
  readonly pending: number;
  close(): Promise<void>;
}

/** Options for {@link startOllamaStandIn}. */
export interface OllamaStandInOptions {
  /** Models the server has; others get Ollama's 404 "not found". Default: qwen2.5-coder:7b. */
  models?: string[];
  replies?: ScriptedReply[];
}

const estimate = (text: string) => Math.max(1, Math.ceil(text.length / 4));

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
};

const modelDetails = {
  parent_model: '',
  format: 'gguf',
  family: 'qwen2',
  families: ['qwen2'],
  parameter_size: '7.6B',
  quantization_level: 'Q4_K_M',
};

/** Starts the stand-in; see {@link OllamaStandIn}. */
export async function startOllamaStandIn(options: OllamaStandInOptions = {}): Promise<OllamaStandIn> {
  const models = options.models ?? ['qwen2.5-coder:7b'];
  const script: ScriptedReply[] = [...(options.replies ?? [])];
  const requests: RecordedChat[] = [];
  const hasModel = (name: string) => models.includes(name) || models.includes(`${name}:latest`);

  const chat = async (req: IncomingMessage, res: ServerResponse, api: 'ollama' | 'openai') => {
    const body = await readJson(req);
    const model = String(body.model ?? '');
    const messages = Array.isArray(body.messages) ? (body.messages as { role: string; content: string }[]) : [];
    // Ollama streams unless told not to; the OpenAI API only when asked.
    const stream = api === 'ollama' ? body.stream !== false : body.stream === true;
    const { model: _m, messages: _msgs, stream: _s, ...rest } = body;
    const recorded: RecordedChat = {
      api,
      url: req.url ?? '',
      model,
      messages,
      stream,
      options: api === 'ollama' ? ((body.options as Record<string, unknown> | undefined) ?? {}) : rest,
      ...(req.headers.authorization === undefined ? {} : { authorization: req.headers.authorization }),
    };
    requests.push(recorded);
    const fail = (status: number, error: string) =>
      json(res, status, api === 'ollama' ? { error } : { error: { message: error, type: 'api_error' } });
    if (!hasModel(model)) return fail(404, `model "${model}" not found, try pulling it first`);
    const next = script.shift();
    if (next === undefined) return fail(500, 'stand-in: no scripted reply left');
    if (typeof next === 'object' && 'hang' in next) return; // answered by nobody; the socket closes with the client or the stand-in
    if (typeof next === 'object' && 'status' in next) return fail(next.status, next.error);
    const content = typeof next === 'string' ? next : next.content;
    const promptTokens =
      (typeof next === 'object' ? next.promptTokens : undefined) ?? estimate(messages.map((m) => m.content).join('\n'));
    const completionTokens = (typeof next === 'object' ? next.completionTokens : undefined) ?? estimate(content);
    const createdAt = new Date().toISOString();

    if (api === 'openai') {
      return json(res, 200, {
        id: `chatcmpl-standin-${requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      });
    }
    const final = {
      model,
      created_at: createdAt,
      done: true,
      done_reason: 'stop',
      total_duration: 1_000_000,
      load_duration: 100_000,
      prompt_eval_count: promptTokens,
      prompt_eval_duration: 200_000,
      eval_count: completionTokens,
      eval_duration: 700_000,
    };
    if (!stream) return json(res, 200, { ...final, message: { role: 'assistant', content } });
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    // A few chunks, as a real server sends tokens as they come.
    const size = Math.max(1, Math.ceil(content.length / 3));
    for (let i = 0; i < content.length; i += size) {
      res.write(
        `${JSON.stringify({ model, created_at: createdAt, message: { role: 'assistant', content: content.slice(i, i + size) }, done: false })}\n`,
      );
    }
    res.end(`${JSON.stringify({ ...final, message: { role: 'assistant', content: '' } })}\n`);
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const route = `${req.method ?? ''} ${path ?? ''}`;
    const handle = async () => {
      switch (route) {
        case 'GET /':
          return void res.writeHead(200, { 'content-type': 'text/plain' }).end('Ollama is running (stand-in)');
        case 'GET /api/version':
          return json(res, 200, { version: '0.0.0-stand-in' });
        case 'GET /api/tags':
          return json(res, 200, {
            models: models.map((name) => ({
              name,
              model: name,
              modified_at: new Date(0).toISOString(),
              size: 4_683_087_332,
              digest: 'stand-in',
              details: modelDetails,
            })),
          });
        case 'POST /api/show': {
          const body = await readJson(req);
          const name = String(body.model ?? body.name ?? '');
          if (!hasModel(name)) return json(res, 404, { error: `model '${name}' not found` });
          return json(res, 200, {
            modelfile: '',
            parameters: '',
            template: '{{ .Prompt }}',
            details: modelDetails,
            model_info: {},
            capabilities: ['completion'],
          });
        }
        case 'POST /api/chat':
          return chat(req, res, 'ollama');
        case 'POST /v1/chat/completions':
          return chat(req, res, 'openai');
        default:
          return json(res, 404, { error: `stand-in: no route ${route}` });
      }
    };
    handle().catch((error: unknown) => {
      if (!res.headersSent)
        json(res, 400, { error: `stand-in: ${error instanceof Error ? error.message : String(error)}` });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    openAiBase: `${url}/v1`,
    requests,
    get pending() {
      return script.length;
    },
    reply: (...replies) => void script.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
