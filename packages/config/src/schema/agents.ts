import * as z from 'zod';
import { agentTimeout, argv, envVarName, runEnv, seconds } from './common.js';

/** Every agent a job or `agents.default` may name. */
export const AGENT_NAMES = ['aider', 'claude', 'codex', 'gemini', 'ollama', 'command', 'script'] as const;

/** A name from {@link AGENT_NAMES}. */
export type AgentName = (typeof AGENT_NAMES)[number];

const binary = (name: string) =>
  z
    .string()
    .min(1)
    .default(name)
    .describe('Executable: a name looked up on PATH, or a path (relative paths are resolved against the config file).');

const extraArgs = z
  .array(z.string())
  .default(() => [])
  .describe('Extra arguments appended to the command line.');

const API_KEY_ENV_DOC =
  'Name of the environment variable holding the API key. Keys are never config values; the value is masked in logs.';

// describe() goes on the outermost wrapper: that is what the JSON Schema and tests read.
const apiKeyEnv = (name?: string) =>
  name === undefined
    ? envVarName.optional().describe(API_KEY_ENV_DOC)
    : envVarName.default(name).describe(API_KEY_ENV_DOC);

const aider = z
  .strictObject({
    binary: binary('aider'),
    model: z.string().min(1).default('ollama_chat/qwen2.5-coder:7b').describe('Model passed as --model.'),
    map_tokens: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('Passed as --map-tokens; 0 disables the repo map, which small local models choke on.'),
    timeout_seconds: agentTimeout(),
    extra_args: extraArgs,
    api_key_env: apiKeyEnv(),
  })
  .prefault({})
  .describe('Aider CLI.');

const claude = z
  .strictObject({
    binary: binary('claude'),
    model: z.string().min(1).optional().describe('Model passed as --model; the CLI default when unset.'),
    max_turns: z.number().int().min(1).default(30).describe('Passed as --max-turns.'),
    timeout_seconds: agentTimeout(),
    extra_args: extraArgs,
    api_key_env: apiKeyEnv('ANTHROPIC_API_KEY'),
  })
  .prefault({})
  .describe('Claude Code CLI.');

const codex = z
  .strictObject({
    binary: binary('codex'),
    model: z.string().min(1).optional().describe('Model passed as --model; the CLI default when unset.'),
    approval_args: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        "How codex exec is allowed to edit the working copy. Unset: --sandbox workspace-write, or --sandbox danger-full-access when codefleet's sandbox isolates the run (Codex's own sandbox cannot nest in it); older CLIs that lack --sandbox take [--full-auto].",
      ),
    timeout_seconds: agentTimeout(),
    extra_args: extraArgs,
    api_key_env: apiKeyEnv('OPENAI_API_KEY'),
  })
  .prefault({})
  .describe('OpenAI Codex CLI.');

const gemini = z
  .strictObject({
    binary: binary('gemini'),
    model: z.string().min(1).optional().describe('Model passed as --model; the CLI default when unset.'),
    approval_args: z
      .array(z.string().min(1))
      .min(1)
      .default(() => ['--approval-mode', 'yolo', '--skip-trust'])
      .describe(
        'How gemini is allowed to act without asking; older CLIs that lack --approval-mode or --skip-trust take [-y].',
      ),
    max_turns: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "Model turns one run may take (the CLI's model.maxSessionTurns; exit 53 when reached). Set, or a money budget (costs.budget_usd): each run gets its own GEMINI_CLI_HOME with the settings codefleet writes (the cap, a budget hook), so the host's ~/.gemini is not read (use an API key, not a Google login). Unset: no cap.",
      ),
    timeout_seconds: agentTimeout(),
    extra_args: extraArgs,
    api_key_env: apiKeyEnv('GEMINI_API_KEY'),
  })
  .prefault({})
  .describe('Gemini CLI.');

const ollama = z
  .strictObject({
    provider: z
      .enum(['ollama', 'openai', 'anthropic'])
      .default('ollama')
      .describe(
        "API the model is reached through: 'ollama' (Ollama's native API), 'openai' " +
          '(any OpenAI-compatible endpoint: vLLM, LM Studio, DeepSeek, OpenAI, Ollama /v1) or ' +
          "'anthropic' (the Anthropic Messages API).",
      ),
    host: z
      .url()
      .optional()
      .describe(
        'Server URL. ollama: default $OLLAMA_HOST, else http://127.0.0.1:11434. ' +
          'openai: the API base including the version, e.g. https://api.openai.com/v1 (required). ' +
          'anthropic: default https://api.anthropic.com (without /v1).',
      ),
    model: z
      .string()
      .min(1)
      .default('auto')
      .describe(
        'Model name, or auto (the default): qwen2.5-coder:7b on Apple silicon (darwin arm64) or with a GPU ' +
          "(/dev/nvidia0, /dev/kfd or nvidia-smi on PATH of the worker's host), qwen2.5-coder:1.5b on CPU-only hosts. " +
          'Name the model when the server runs on other hardware, and always for a hosted provider (e.g. deepseek-chat).',
      ),
    timeout_seconds: agentTimeout(),
    request_timeout_seconds: seconds(1)
      .default(300)
      .describe(
        'Timeout of one HTTP request to the model server in seconds: a server that accepts the connection and ' +
          'never answers is given up after it (a transient failure, retried like one), well before timeout_seconds ' +
          'ends the run. Raise it for a slow local model that takes longer to write a whole reply.',
      ),
    request_retries: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(2)
      .describe(
        'Requests tried again after a transient failure (no answer within request_timeout_seconds, no connection, ' +
          "HTTP 429 or 5xx), with a short growing backoff or the server's Retry-After when longer; never past the " +
          "run's timeout and never after a cancel. The only retry of a model request; 0 for none.",
      ),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Upper bound on generated tokens per request (num_predict).'),
    context_tokens: z
      .number()
      .int()
      .min(1024)
      .default(8192)
      .describe(
        'Context window asked of Ollama (num_ctx; PC 13.3). File contents in the prompt are bounded to about ' +
          'half of it (2 characters per token), leaving room for the instructions and the reply.',
      ),
    token_budget: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "Tokens (prompt + completion, as the server counts them) one job may spend with this agent. Each call's " +
          'reply is capped at what its prompt (estimated at 4 characters a token) leaves; when another model call is ' +
          'needed and the budget is spent, or too small for the prompt, the job ends as budget_exceeded. Unset: no budget.',
      ),
    api_key_env: envVarName
      .optional()
      .describe(`${API_KEY_ENV_DOC} Default for the anthropic provider: ANTHROPIC_API_KEY.`),
  })
  .prefault({})
  .describe(
    'Built-in agent on a model server (Ollama, OpenAI-compatible or Anthropic): asks for a plan and a patch, applies it with the patch engine.',
  );

const command = z
  .strictObject({
    argv: argv
      .default(() => [])
      .describe(
        'Command template as an argument vector, run without a shell; ' +
          'placeholders such as {prompt_file} and {workdir} are filled in by the command agent.',
      ),
    timeout_seconds: agentTimeout(),
    api_key_env: apiKeyEnv(),
  })
  .prefault({})
  .describe('Any other coding CLI, described by an argument template.');

const script = z
  .strictObject({
    module: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Node.js program run as `node <module> --workdir … --prompt-file … --pass … --attempt …` in the working copy (docs/agents.md: the script agent); ./ and ../ paths are resolved against the config file.',
      ),
    timeout_seconds: agentTimeout(),
  })
  .prefault({})
  .describe('Scripted agent: a Node.js program of your own, run in the sandbox like a command; needs no model.');

/** `agents:` — which coding agent runs by default and how each one is started. */
export const agentsSchema = z
  .strictObject({
    default: z.enum(AGENT_NAMES).default('script').describe('Agent used when a job names none.'),
    timeout_seconds: z
      .number()
      .int()
      .min(1)
      .default(600)
      .describe('Default timeout for one agent run in seconds; the whole process tree is killed.'),
    env: runEnv('agents'),
    aider,
    claude,
    codex,
    gemini,
    ollama,
    command,
    script,
    profiles: z
      .record(
        z.string().regex(/^[a-z0-9_-]{1,64}$/, { error: 'expected a profile name ([a-z0-9_-]{1,64})' }),
        z.strictObject({
          agent: z.enum(AGENT_NAMES).describe('The agent this profile runs.'),
          model: z.string().min(1).optional().describe("Model for this profile instead of the agent's own."),
          budget_usd: z
            .number()
            .positive()
            .max(1_000_000)
            .optional()
            .describe('Most one job may spend on this profile as an escalation tier; when spent, the next tier runs.'),
        }),
      )
      .default(() => ({}))
      .describe(
        'Named agent + model pairs ("implementer", "strongest"), usable wherever an agent name is (a job\'s agent, router.routes).',
      ),
    escalation: z
      .array(z.string().regex(/^[a-z0-9_-]{1,64}$/, { error: 'expected a profile or agent name' }))
      .max(8)
      .default(() => [])
      .describe(
        'Local first, escalate on failure: profiles (or agent names) tried in order. A job starts on the first; when its fix ' +
          'attempts are exhausted or its tier budget (profiles.<name>.budget_usd) is spent, the next tier starts from the base ' +
          "with the earlier tier's last feedback. Used when a job names no agent, or names `escalation`.",
      ),
    chains: z
      .record(
        z.string().regex(/^[a-z0-9_-]{1,64}$/, { error: 'expected a chain name ([a-z0-9_-]{1,64})' }),
        z
          .array(z.string().regex(/^[a-z0-9_-]{1,64}$/, { error: 'expected a profile or agent name' }))
          .min(1)
          .max(8),
      )
      .default(() => ({}))
      .describe(
        'More escalation chains by name, each run like agents.escalation: a job or a router route (CODE1–CODE3) that ' +
          'names a chain runs its tiers in order. `escalation` names agents.escalation itself.',
      ),
  })
  .prefault({})
  .describe('Coding agents.');
