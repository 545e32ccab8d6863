import type { OllamaAgentConfig } from '@codefleet/config';
import { boundTail, CodefleetError } from '@codefleet/core';
import { applyPatch } from '@codefleet/patch';
import { changedFiles, headCommit } from '../changed-files.js';
import { withoutForgeCredentials } from '../env.js';
import { applyOptionsFor, type PatchPolicy } from '../patch-policy.js';
import type { Agent, AgentOutcome, AgentRunRequest, AgentRunResult, ModelCall } from '../port.js';
import { costOf } from '../pricing.js';
import { allowance, estimateTokens } from './budget.js';
import { modelErrorKind, type ChatMessage, type ChatModel, type ChatReply } from './chat-model.js';
import { createAnthropicModel } from './anthropic-model.js';
import { checkedModelCallPolicy } from './model-call-policy.js';
import { createOllamaModel } from './ollama-model.js';
import { createOpenAiModel } from './openai-model.js';
import { buildPrompt, reaskMessage } from './prompt.js';
import { readReply } from './reply.js';

/** How the built-in agent reaches its model and how much it may read and spend. */
export interface ModelAgentOptions {
  /** Recorded as the agent's name. */
  name?: string;
  /** The model for one run; gets the run's environment, where the API key is. */
  modelFor(env: Readonly<Record<string, string>>): ChatModel;
  /** Bound on the characters of file contents in the prompt. */
  contextChars: number;
  /** Upper bound on generated tokens per call. */
  maxTokens?: number;
  timeoutMs?: number;
  tokenBudget?: number;
  /** The API key variable, for the runtime to pass through. */
  allowEnv?: readonly string[];
  /** config.yaml's `patch:` safeguards for applying replies; default: continue, the engine's protected files. */
  patchPolicy?: PatchPolicy;
}

const maxTail = 8_192;

/**
 * The built-in agent: one model call per run asks for a plan and a patch (prompt from the
 * task, bounded file contents and the previous feedback), the patch engine applies it
 * inside the working copy. A reply that cannot be used is sent back once with the reason;
 * a second unusable reply is a `failed` run, which the pipeline feeds back like a failed
 * build. Only file changes are applied (see `readReply`).
 *
 * Outcomes: `changed` / `no_changes` after a clean apply; `failed` for an unusable reply or
 * a command the engine refused, with the engine's words; `timeout` (exit code 124) when
 * `timeoutMs` passed, the HTTP request aborted; `error` when the model could not be called
 * (server down, model missing, key refused, HTTP 5xx) or the run was cancelled.
 *
 * Every model call is recorded in `modelCalls` (AgentRunner): `ok`, `unusable` (the re-asked
 * reply), a `ModelErrorKind` for a failed call, or `budget` for one the budgets refused;
 * priced by `req.prices`. `req.budgetUsd` is honoured before each call like the token budget.
 */
export function createModelAgent(options: ModelAgentOptions): Agent {
  return {
    // No context file: the prompt carries the task file and the repository's own files.
    name: options.name ?? 'ollama',
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.allowEnv === undefined ? {} : { allowEnv: options.allowEnv }),
    ...(options.tokenBudget === undefined ? {} : { tokenBudget: options.tokenBudget }),
    run: (req) => runOnce(options, req),
  };
}

/** One run's record as it goes: its log, the tokens and calls charged, and the model once chosen. */
interface RunLog {
  started: number;
  before: string | null;
  lines: string[];
  tokens: { prompt: number; completion: number };
  calls: ModelCall[];
  model?: ChatModel;
}

async function runOnce(options: ModelAgentOptions, req: AgentRunRequest): Promise<AgentRunResult> {
  const env = withoutForgeCredentials(req.env);
  const run: RunLog = {
    started: performance.now(),
    before: await headCommit(req.workdir, env, req.gitPath),
    lines: [],
    tokens: { prompt: 0, completion: 0 },
    calls: [],
  };
  const say = (line: string) => {
    run.lines.push(line);
    req.onOutput?.(`${line}\n`);
  };
  const finish = (outcome: AgentOutcome, detail?: string, flag?: 'permanent' | 'budget') =>
    finishRun(run, req, env, outcome, detail, flag);
  if (req.signal?.aborted) return finish('error', 'cancelled');

  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  const deadline = Date.now() + req.timeoutMs;
  const model = options.modelFor(env);
  run.model = model;
  const record = (outcome: string, used: { prompt: number; completion: number }, latencyMs = 0) =>
    recordCall(run, req, outcome, used, latencyMs);
  const prompt = await buildPrompt({
    workdir: req.workdir,
    prompt: req.prompt,
    pass: req.pass,
    env,
    gitPath: req.gitPath,
    contextChars: options.contextChars,
    changed: await changedFiles(req.workdir, env, { gitPath: req.gitPath }).catch(() => []),
    ...(req.feedback === undefined ? {} : { feedback: req.feedback }),
  });
  say(
    `${model.label}: ${prompt.included.length} file(s) in the prompt${prompt.omitted.length > 0 ? `, ${prompt.omitted.length} left out for length` : ''}`,
  );
  const messages: ChatMessage[] = [...prompt.messages];

  for (let ask = 1; ask <= 2; ask += 1) {
    const allowed = allowance({
      messages,
      spentTokens: run.tokens.prompt + run.tokens.completion,
      tokenBudget: req.tokenBudget,
      spentUsd: run.calls.reduce((sum, call) => sum + (call.costUsd ?? 0), 0),
      budgetUsd: req.budgetUsd,
      prices: req.prices,
      model: model.model,
      maxTokens: options.maxTokens,
    });
    if ('refused' in allowed) {
      record('budget', { prompt: 0, completion: 0 });
      return finish('failed', allowed.refused, 'budget');
    }
    const call = await callModel(model, messages, { signal, deadline, timeout, ...allowed }, run, req);
    if ('error' in call) {
      record(modelErrorKind(call.error) ?? 'error', call.charged, call.latencyMs);
      return callFailed(call.error, req, timeout, say, finish);
    }
    const { reply, latencyMs } = call;
    run.tokens.prompt += reply.promptTokens;
    run.tokens.completion += reply.completionTokens;
    say(`reply ${ask}: ${reply.promptTokens} prompt + ${reply.completionTokens} completion tokens`);
    say(reply.content.trim());
    const read = readReply(reply.content);
    for (const note of read.notes) say(`note: ${note}`);
    record(read.ok ? 'ok' : 'unusable', { prompt: reply.promptTokens, completion: reply.completionTokens }, latencyMs);
    if (read.ok) return applyReply(read.commands, req, env, say, finish, options.patchPolicy);
    say(`unusable reply: ${read.problem}`);
    if (ask === 2) return finish('failed', `the model's reply could not be used, twice: ${read.problem}`.slice(0, 500));
    messages.push({ role: 'assistant', content: reply.content }, { role: 'user', content: reaskMessage(read.problem) });
  }
  return finish('failed', 'no usable reply');
}

/**
 * One model call, its text streamed to the run's output. A call that throws is charged what
 * it likely spent and returned as `error`: the server reports no count for a call that never
 * finished, yet a model that read the prompt and then timed out did spend, so an estimate
 * (about 4 characters a token) keeps the budget holding across retries. The provider's
 * model-call policy bounds each request and retries transient failures; this calls once.
 */
async function callModel(
  model: ChatModel,
  messages: readonly ChatMessage[],
  call: {
    signal: AbortSignal;
    deadline: number;
    timeout: AbortSignal;
    maxTokens: number | undefined;
    promptEstimate: number;
  },
  run: RunLog,
  req: AgentRunRequest,
): Promise<
  | { reply: ChatReply; latencyMs: number }
  | { error: unknown; charged: { prompt: number; completion: number }; latencyMs: number }
> {
  let streamed = 0;
  const started = performance.now();
  try {
    const reply = await model.chat(messages, {
      signal: call.signal,
      deadline: call.deadline,
      ...(call.maxTokens === undefined ? {} : { maxTokens: call.maxTokens }),
      onText: (text) => {
        streamed += text.length;
        req.onOutput?.(text);
      },
    });
    return { reply, latencyMs: performance.now() - started };
  } catch (error) {
    const charged =
      streamed > 0 || call.timeout.aborted || modelErrorKind(error) === 'timeout'
        ? { prompt: call.promptEstimate, completion: estimateTokens(streamed) }
        : { prompt: 0, completion: 0 };
    run.tokens.prompt += charged.prompt;
    run.tokens.completion += charged.completion;
    return { error, charged, latencyMs: performance.now() - started };
  }
}

/**
 * Records a model call, the refused and the failed ones too: the run record shows what was
 * asked of which model, what it took and why it ended. Priced by `req.prices`.
 */
function recordCall(
  run: RunLog,
  req: AgentRunRequest,
  outcome: string,
  used: { prompt: number; completion: number },
  latencyMs: number,
): void {
  if (run.model === undefined) return;
  const { provider, model } = run.model;
  const costUsd = costOf(req.prices, model, used);
  run.calls.push({
    provider,
    model,
    promptTokens: used.prompt,
    completionTokens: used.completion,
    latencyMs: Math.round(latencyMs),
    outcome,
    ...(costUsd === undefined ? {} : { costUsd }),
  });
}

/** How a model call that threw ends the run: timed out, cancelled, or an error (permanent for a refused key or a missing model). */
function callFailed(
  error: unknown,
  req: AgentRunRequest,
  timeout: AbortSignal,
  say: (line: string) => void,
  finish: (outcome: AgentOutcome, detail?: string, flag?: 'permanent') => Promise<AgentRunResult>,
): Promise<AgentRunResult> {
  if (timeout.aborted)
    return finish('timeout', `no complete reply within ${Math.round(req.timeoutMs / 1000)} s; request aborted`);
  if (req.signal?.aborted || modelErrorKind(error) === 'aborted') return finish('error', 'cancelled');
  const message = error instanceof Error ? error.message : String(error);
  say(`model call failed: ${message}`);
  // A refused key or a missing model stays so on every retry: dead-letter at once.
  const kind = modelErrorKind(error);
  return finish('error', message, kind === 'unauthorized' || kind === 'model_not_found' ? 'permanent' : undefined);
}

/** The run's result: the outcome checked against the files it really changed since it started. */
async function finishRun(
  run: RunLog,
  req: AgentRunRequest,
  env: Record<string, string>,
  outcome: AgentOutcome,
  detail?: string,
  flag?: 'permanent' | 'budget',
): Promise<AgentRunResult> {
  const files = await changedFiles(req.workdir, env, { since: run.before, gitPath: req.gitPath }).catch(
    () => undefined,
  );
  let verdict = outcome;
  let why = detail;
  if (files === undefined && (outcome === 'changed' || outcome === 'no_changes'))
    [verdict, why] = ['error', 'could not list changed files'];
  if (verdict === 'changed' && files?.length === 0) [verdict, why] = ['no_changes', 'the patch changed nothing'];
  const exitCode = verdict === 'timeout' ? 124 : verdict === 'error' ? null : verdict === 'failed' ? 1 : 0;
  return {
    exitCode,
    signal: null,
    timedOut: verdict === 'timeout',
    durationMs: Math.round(performance.now() - run.started),
    outputTail: boundTail(run.lines.join('\n'), maxTail),
    changedFiles: files ?? [],
    outcome: verdict,
    tokens: { ...run.tokens },
    ...(why === undefined ? {} : { detail: why }),
    ...(flag === 'permanent' && verdict === 'error' ? { permanent: true } : {}),
    ...(flag === 'budget' ? { budgetExceeded: true } : {}),
    ...(run.model === undefined ? {} : { model: run.model.model, modelCalls: run.calls, ...costSum(run.calls) }),
  };
}

async function applyReply(
  commands: Parameters<typeof applyPatch>[0],
  req: AgentRunRequest,
  env: Record<string, string>,
  say: (line: string) => void,
  finish: (outcome: AgentOutcome, detail?: string) => Promise<AgentRunResult>,
  policy: PatchPolicy | undefined,
): Promise<AgentRunResult> {
  // Continue mode by default: independent file edits land even when one is refused; the
  // refusal is fed back, and the next prompt shows the files as they are now.
  const result = await applyPatch(commands, {
    ...applyOptionsFor(policy, req.workdir, env, say, 'continue'),
    ...(req.gitPath === undefined ? {} : { gitPath: req.gitPath }),
  });
  for (const r of result.results) {
    const target = 'target' in r.command && r.command.target ? ` ${r.command.target}` : '';
    // Notes say when the engine had to bend a diff to apply it (fuzz, recount, merge): worth a look.
    say(
      `${r.status} ${r.command.type} ${r.command.action}${target}${r.error ? `: ${r.error}` : ''}${r.notes ? ` (${r.notes.join('; ')})` : ''}`,
    );
  }
  say(result.summary);
  // The reasons, not only the count: they are what the model is told to fix next time.
  const reasons = result.results
    .filter((r) => r.status === 'failed')
    .slice(0, 3)
    .map((r) => `${'target' in r.command && r.command.target ? `${r.command.target}: ` : ''}${r.error ?? 'failed'}`);
  if (result.failed > 0)
    return finish(
      'failed',
      `the patch engine refused part of the reply: ${result.summary}; ${reasons.join('; ')}`.slice(0, 800),
    );
  return finish('changed');
}

/**
 * The built-in agent from `agents.ollama`: the Ollama provider through the `ollama` client,
 * any OpenAI-compatible endpoint, or the Anthropic Messages API. The API key, when `api_key_env` names one, is read
 * from the run's environment (the agent's `allowEnv` lets it through) and sent as a header.
 * Every provider takes its request timeout and retries from `request_timeout_seconds` and
 * `request_retries` (model-call-policy.ts).
 *
 * @throws {CodefleetError} `invalid_config` when the openai provider has no `host`.
 * @throws {RangeError} naming the setting when the request timeout or retries are out of range.
 */
export function createBuiltinAgent(config: OllamaAgentConfig, patchPolicy?: PatchPolicy): Agent {
  const host = config.host;
  if (host === undefined) {
    throw new CodefleetError(
      'invalid_config',
      'agents.ollama.host is not set: name the server (the API base for the openai provider)',
      {
        details: { path: 'agents.ollama.host' },
      },
    );
  }
  const policy = checkedModelCallPolicy({
    timeoutMs: config.request_timeout_seconds * 1000,
    retries: config.request_retries,
  });
  const clientOptions = (env: Readonly<Record<string, string>>) => {
    const key = config.api_key_env === undefined ? undefined : env[config.api_key_env];
    return { policy, ...(key === undefined || key === '' ? {} : { apiKey: key }) };
  };
  return createModelAgent({
    name: 'ollama',
    modelFor: (env) => {
      switch (config.provider) {
        case 'openai':
          return createOpenAiModel({ baseUrl: host, model: config.model, ...clientOptions(env) });
        case 'anthropic':
          return createAnthropicModel({ baseUrl: host, model: config.model, ...clientOptions(env) });
        default:
          return createOllamaModel({
            host,
            model: config.model,
            contextTokens: config.context_tokens,
            ...clientOptions(env),
          });
      }
    },
    // About half the context window, at roughly 4 characters per token.
    contextChars: config.context_tokens * 2,
    timeoutMs: config.timeout_seconds * 1000,
    ...(config.max_tokens === undefined ? {} : { maxTokens: config.max_tokens }),
    ...(config.token_budget === undefined ? {} : { tokenBudget: config.token_budget }),
    ...(config.api_key_env === undefined ? {} : { allowEnv: [config.api_key_env] }),
    ...(patchPolicy === undefined ? {} : { patchPolicy }),
  });
}

/** `costUsd`: the sum of the priced calls; absent when none was priced, so unknown never reads as free. */
function costSum(calls: readonly ModelCall[]): { costUsd?: number } {
  const priced = calls.filter((call) => call.costUsd !== undefined);
  return priced.length === 0 ? {} : { costUsd: priced.reduce((sum, call) => sum + (call.costUsd ?? 0), 0) };
}
