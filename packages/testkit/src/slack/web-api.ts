import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SlackState } from './state.js';

/**
 * The Web API half of the Slack STAND-IN: `POST /api/<method>` with the token in the
 * `Authorization: Bearer` header (or a `token` field), form-encoded or JSON bodies, and
 * Slack's answers: HTTP 200 with `{ ok: true, … }` or `{ ok: false, error }`, and 429 with
 * `Retry-After` (seconds) when rate limited.
 */

/** A scripted failure of one method: an `ok:false` error, or a 429 with Retry-After. */
export type SlackFault = { error: string } | { status: 429; retryAfter: number };

/** One Web API call as the stand-in received it. */
export interface SlackApiCall {
  method: string;
  args: Record<string, unknown>;
  /** The token it carried (tests assert the right token went to the right method). */
  token?: string;
}

export interface WebApiContext {
  state: SlackState;
  botToken: string;
  appToken: string;
  botUserId: string;
  botId: string;
  teamId: string;
  appId: string;
  /** The ws:// URL `apps.connections.open` hands out. */
  socketUrl(): string;
  faults: Map<string, SlackFault[]>;
  /** Methods whose next matching call waits (received, not yet answered) until its gate opens. */
  holds: Map<string, { match: (args: Record<string, unknown>) => boolean; gate: Promise<void> }[]>;
  calls: SlackApiCall[];
  /** Methods (or `*`: every method) whose calls are received and never answered. */
  silent: Set<string>;
  /** Methods answered 429 with this Retry-After (seconds) on every call. */
  rateLimited: Map<string, number>;
}

/** Slack's own limits the stand-in enforces (docs: chat.postMessage, Block Kit reference). */
const slackLimits = { textChars: 40_000, sectionTextChars: 3_000, blocks: 50, buttonValueChars: 2_000 } as const;

async function readArgs(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  if ((req.headers['content-type'] ?? '').includes('application/json'))
    return JSON.parse(text) as Record<string, unknown>;
  const args: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    // The Node SDK sends arrays and objects (blocks) as JSON inside a form field.
    args[key] = /^[[{]/.test(value) ? safeJson(value) : value;
  }
  return args;
}

function safeJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

const send = (
  res: ServerResponse,
  body: Record<string, unknown>,
  status = 200,
  headers: Record<string, string> = {},
) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
};

function tokenOf(req: IncomingMessage, args: Record<string, unknown>): string | undefined {
  const header = req.headers.authorization;
  if (typeof header === 'string' && header.startsWith('Bearer ')) return header.slice(7);
  return typeof args.token === 'string' ? args.token : undefined;
}

const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

function blocksError(blocks: unknown): string | undefined {
  if (blocks === undefined) return undefined;
  if (!Array.isArray(blocks) || blocks.length > slackLimits.blocks) return 'invalid_blocks';
  for (const block of blocks as { type?: string; text?: { text?: string }; elements?: { value?: string }[] }[]) {
    if ((block.text?.text?.length ?? 0) > slackLimits.sectionTextChars) return 'invalid_blocks';
    if (block.elements?.some((e) => (e.value?.length ?? 0) > slackLimits.buttonValueChars)) return 'invalid_blocks';
  }
  return undefined;
}

/** Serves one `POST /api/<method>` request. */
export async function serveWebApi(
  ctx: WebApiContext,
  method: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const args = await readArgs(req);
  const token = tokenOf(req, args);
  ctx.calls.push({ method, args, ...(token === undefined ? {} : { token }) });
  // A platform that accepts the request and never answers: the connection stays open until close.
  if (ctx.silent.has(method) || ctx.silent.has('*')) return;
  const retryAfter = ctx.rateLimited.get(method);
  if (retryAfter !== undefined)
    return send(res, { ok: false, error: 'ratelimited' }, 429, { 'retry-after': String(retryAfter) });
  // A held call is carried out when released, whether or not its client is still there.
  const holds = ctx.holds.get(method) ?? [];
  const hold = holds.findIndex((h) => h.match(args));
  if (hold !== -1) await holds.splice(hold, 1)[0]?.gate;
  const fault = ctx.faults.get(method)?.shift();
  if (fault !== undefined) {
    if ('status' in fault)
      return send(res, { ok: false, error: 'ratelimited' }, 429, { 'retry-after': String(fault.retryAfter) });
    return send(res, { ok: false, error: fault.error });
  }
  if (token === undefined || token === '') return send(res, { ok: false, error: 'not_authed' });
  if (method === 'apps.connections.open') {
    // Only an app-level token opens a Socket Mode connection (docs: apps.connections.open).
    if (token === ctx.appToken) return send(res, { ok: true, url: ctx.socketUrl() });
    return send(res, { ok: false, error: token === ctx.botToken ? 'not_allowed_token_type' : 'invalid_auth' });
  }
  if (token !== ctx.botToken)
    return send(res, { ok: false, error: token === ctx.appToken ? 'not_allowed_token_type' : 'invalid_auth' });
  const handler = methods[method];
  if (handler === undefined) return send(res, { ok: false, error: 'unknown_method' });
  send(res, handler(ctx, args));
}

type Method = (ctx: WebApiContext, args: Record<string, unknown>) => Record<string, unknown>;

const methods: Record<string, Method> = {
  'auth.test': (ctx) => ({
    ok: true,
    url: 'https://standin.slack.example/',
    team: 'Stand-in',
    user: 'codefleet',
    team_id: ctx.teamId,
    user_id: ctx.botUserId,
    bot_id: ctx.botId,
    is_enterprise_install: false,
  }),
  'chat.postMessage': (ctx, args) => {
    const channel = str(args.channel) ?? '';
    if (!ctx.state.knows(channel)) return { ok: false, error: 'channel_not_found' };
    const text = str(args.text) ?? '';
    if (text === '' && args.blocks === undefined) return { ok: false, error: 'no_text' };
    if (text.length > slackLimits.textChars) return { ok: false, error: 'msg_too_long' };
    const blocksProblem = blocksError(args.blocks);
    if (blocksProblem !== undefined) return { ok: false, error: blocksProblem };
    const threadTs = str(args.thread_ts);
    const stored = ctx.state.add({
      channel,
      text,
      user: ctx.botUserId,
      bot_id: ctx.botId,
      ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
    });
    return {
      ok: true,
      channel,
      ts: stored.ts,
      message: {
        type: 'message',
        text,
        user: ctx.botUserId,
        bot_id: ctx.botId,
        ts: stored.ts,
        ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      },
    };
  },
  'chat.update': (ctx, args) => {
    const channel = str(args.channel) ?? '';
    if (!ctx.state.knows(channel)) return { ok: false, error: 'channel_not_found' };
    const message = ctx.state.get(channel, str(args.ts) ?? '');
    if (message === undefined) return { ok: false, error: 'message_not_found' };
    if (message.bot_id !== ctx.botId) return { ok: false, error: 'cant_update_message' };
    const text = str(args.text) ?? '';
    if (text.length > slackLimits.textChars) return { ok: false, error: 'msg_too_long' };
    const blocksProblem = blocksError(args.blocks);
    if (blocksProblem !== undefined) return { ok: false, error: blocksProblem };
    message.edits.push(message.text);
    message.text = text;
    // As on Slack, an update without `blocks` keeps the old ones (buttons stay clickable under
    // the new text); `blocks: []` removes them.
    if (Array.isArray(args.blocks) && args.blocks.length > 0) message.blocks = args.blocks;
    else if (Array.isArray(args.blocks)) delete message.blocks;
    return { ok: true, channel, ts: message.ts, text };
  },
  'reactions.add': (ctx, args) => react(ctx, args, 'add'),
  'reactions.remove': (ctx, args) => react(ctx, args, 'remove'),
};

function react(ctx: WebApiContext, args: Record<string, unknown>, verb: 'add' | 'remove'): Record<string, unknown> {
  const channel = str(args.channel) ?? '';
  if (!ctx.state.knows(channel)) return { ok: false, error: 'channel_not_found' };
  const name = str(args.name) ?? '';
  if (!/^[a-z0-9_+'-]+$/.test(name)) return { ok: false, error: 'invalid_name' };
  const message = ctx.state.get(channel, str(args.timestamp) ?? '');
  if (message === undefined) return { ok: false, error: 'message_not_found' };
  const users = message.reactions[name] ?? [];
  const mine = users.includes(ctx.botUserId);
  if (verb === 'add') {
    if (mine) return { ok: false, error: 'already_reacted' };
    message.reactions[name] = [...users, ctx.botUserId];
  } else {
    if (!mine) return { ok: false, error: 'no_reaction' };
    const left = users.filter((u) => u !== ctx.botUserId);
    if (left.length === 0) delete message.reactions[name];
    else message.reactions[name] = left;
  }
  return { ok: true };
}
