import * as z from 'zod';
import { envVarName, seconds } from './common.js';

/** The routes a chat or CLI message can take as the router decides them: CODE* make changes, the rest answer. */
export const ROUTES = ['CODE', 'CODE1', 'CODE2', 'CODE3', 'PLAN', 'ANALYZE', 'RESEARCH', 'OPS', 'CHAT'] as const;

/** A name from {@link ROUTES}. */
export type RouteName = (typeof ROUTES)[number];

// Local repositories (absolute paths) are allowed where the forge is local.
const repoRef = z.string().min(1).max(4096);

const confidence = z.number().min(0).max(1);

const rule = z
  .strictObject({
    pattern: z
      .string()
      .min(1)
      .max(1_000)
      .refine((source) => {
        try {
          new RegExp(source, 'iu');
          return true;
        } catch {
          return false;
        }
      }, 'expected a JavaScript regular expression')
      .describe('JavaScript regular expression, matched case-insensitively against the message text.'),
    route: z.enum(ROUTES).describe('Route taken when the pattern matches.'),
    confidence: confidence.default(0.9).describe('Confidence recorded with the decision.'),
    repo: repoRef
      .optional()
      .describe('Repository the message is about when this rule matches (the rules step of repository choice).'),
  })
  .describe('One routing rule: the first that matches wins.');

const localModel = z
  .strictObject({
    provider: z
      .enum(['ollama', 'openai'])
      .default('ollama')
      .describe("'ollama' (native API) or 'openai' (an OpenAI-compatible server)."),
    host: z
      .url()
      .optional()
      .describe(
        'Server URL; default agents.ollama.host (ollama). Must be a local model: loopback, a private address or router.local_hosts.',
      ),
    model: z.string().min(1).default('qwen2.5-coder:1.5b').describe('Model name.'),
    timeout_seconds: seconds(1).default(30).describe('Per request.'),
    api_key_env: envVarName.optional().describe('Name of the variable holding an API key, for servers that want one.'),
  })
  .describe('A local model server.');

const routeTarget = z
  .strictObject({
    agent: z
      .string()
      .regex(/^[a-z0-9_-]{1,64}$/)
      .optional()
      .describe(
        'Agent, agents.profiles or escalation chain (agents.chains, `escalation`) name that runs this route; default agents.default (for CODE routes: agents.escalation when set).',
      ),
  })
  .describe('What runs a route.');

/** `router:` — how a chat or CLI message becomes a route. */
export const routerSchema = z
  .strictObject({
    rules: z
      .array(rule)
      .max(500)
      .default(() => [])
      .describe('Rule dictionary, tried after explicit commands, in order.'),
    classifier: localModel
      .extend({
        enabled: z.boolean().default(true).describe('Ask the local model when no command or rule decided.'),
        min_confidence: confidence
          .default(0.7)
          .describe('Below this the classifier is ignored and the message goes to CHAT.'),
      })
      .prefault({})
      .describe('LLM classifier on a local model, tried after the rules.'),
    chat: localModel
      .extend({ max_tokens: z.number().int().min(16).max(8_192).default(512).describe('Upper bound of an answer.') })
      .prefault({})
      .describe('The local model that answers the CHAT route.'),
    local_hosts: z
      .array(z.string().min(1))
      .default(() => [])
      .describe('Host names counted as local besides loopback and private addresses (e.g. a LAN model server).'),
    routes: z
      .strictObject({
        CODE: routeTarget.prefault({}).describe('The default coder (/code).'),
        CODE1: routeTarget.prefault({}).describe('Coder tier 1 (/code1), e.g. a spec-minded one.'),
        CODE2: routeTarget.prefault({}).describe('Coder tier 2 (/code2), e.g. the implementer.'),
        CODE3: routeTarget.prefault({}).describe('Coder tier 3 (/code3), e.g. the strongest.'),
        PLAN: routeTarget.prefault({}).describe('Read-only planning (/plan); a local agent.'),
        ANALYZE: routeTarget.prefault({}).describe('Read-only analysis (/analyze); a local agent.'),
        RESEARCH: routeTarget.prefault({}).describe('Read-only research (/research); a local agent.'),
      })
      .prefault({})
      .describe(
        'The agent profile of each route that runs an agent. PLAN, ANALYZE and RESEARCH must name a local agent.',
      ),
  })
  .prefault({})
  .describe('Routing of chat and CLI messages: explicit commands, then rules, then a local classifier, else CHAT.');

/** Chat user id → GitHub login: who may start work, checked like the label path. */
const userMap = z.record(
  z.string().min(1).max(100),
  z.string().regex(/^[A-Za-z0-9-]{1,39}$/, { error: 'expected a GitHub login' }),
);

const chatAccess = {
  users: userMap
    .default(() => ({}))
    .describe(
      'Chat user id → GitHub login. Work on a GitHub repository starts only for a mapped login with write permission.',
    ),
  allowed_users: z
    .array(z.string().min(1).max(100))
    .default(() => [])
    .describe('Chat user ids allowed to start work on local repositories (no GitHub login to check).'),
  default_repo: repoRef.optional().describe('Repository used when the message, the rules and the channel name none.'),
};

/** `slack:` — the Slack producer and requester. */
export const slackSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Run the Slack producer in `codefleet serve`.'),
    mode: z
      .enum(['socket', 'http'])
      .default('socket')
      .describe('socket: Socket Mode (no public URL needed); http: Events API over HTTP.'),
    bot_token_env: envVarName.default('SLACK_BOT_TOKEN').describe('Variable holding the bot token (xoxb-…).'),
    app_token_env: envVarName
      .default('SLACK_APP_TOKEN')
      .describe('Variable holding the app-level token (xapp-…, connections:write) for Socket Mode.'),
    signing_secret_env: envVarName
      .default('SLACK_SIGNING_SECRET')
      .describe('Variable holding the signing secret (HTTP mode).'),
    api_url: z.url().default('https://slack.com/api/').describe('Web API base URL.'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe('A port of its own for the HTTP events receiver; unset: served on serve.port at /slack/events.'),
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Address the HTTP receiver binds to; put a TLS proxy in front of it.'),
    channels: z
      .record(
        z.string().min(1).max(100),
        z.strictObject({ repo: repoRef.describe('Default repository of the channel.') }),
      )
      .default(() => ({}))
      .describe('Per channel id: its default repository.'),
    ...chatAccess,
  })
  .prefault({})
  .describe('Slack app (Socket Mode or HTTP events).');

/** `line:` — the LINE producer and requester. */
export const lineSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Run the LINE webhook in `codefleet serve`.'),
    channel_secret_env: envVarName
      .default('LINE_CHANNEL_SECRET')
      .describe('Variable holding the channel secret (x-line-signature).'),
    channel_access_token_env: envVarName
      .default('LINE_CHANNEL_ACCESS_TOKEN')
      .describe('Variable holding the channel access token.'),
    api_url: z.url().default('https://api.line.me').describe('Messaging API base URL.'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe('A port of its own for the LINE webhook; unset: served on serve.port under /line.'),
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Address the webhook binds to; put a TLS proxy in front of it.'),
    allow_code: z
      .boolean()
      .default(false)
      .describe(
        'Allow explicit /code commands from LINE; otherwise every LINE message takes the CHAT route: a LINE chat is for talking, and anyone who can message the bot can write it.',
      ),
    group_prefix: z
      .string()
      .trim()
      .min(1)
      .max(50)
      .optional()
      .describe(
        'In a group or room the bot answers only messages that mention it, or that start with this word (e.g. "codefleet"; compared case-insensitively). One-to-one chats are always answered.',
      ),
    ...chatAccess,
  })
  .prefault({})
  .describe('LINE Messaging API bot.');

/** `http_api:` — the HTTP job API. */
export const httpApiSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Run the HTTP API in `codefleet serve`.'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe('A port of its own for the API; unset: served on serve.port under /v1.'),
    host: z.string().min(1).default('127.0.0.1').describe('Address the API binds to; put a TLS proxy in front of it.'),
    token_env: envVarName.default('CODEFLEET_API_TOKEN').describe('Variable holding the bearer token clients send.'),
    callback_secret_env: envVarName
      .default('CODEFLEET_CALLBACK_SECRET')
      .describe('Variable holding the HMAC key completion webhooks are signed with.'),
    callback_hosts: z
      .array(z.string().min(1))
      .default(() => [])
      .describe("Hosts a job's callback_url may point at; empty: callbacks are refused."),
  })
  .prefault({})
  .describe('HTTP API: POST /v1/jobs, GET /v1/jobs/:id, POST /v1/jobs/:id/cancel.');
