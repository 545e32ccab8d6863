import { formatUsd } from '@codefleet/core';
import { costOf } from '../pricing.js';
import type { AgentRunRequest, ModelCall } from '../port.js';
import type { RunObserver, RunReport, WatchStop } from '../process-agent.js';

/**
 * What `codex exec --json` prints, one JSON object a line on stdout (0.169.0):
 * `thread.started`, `turn.started`, `item.started` / `item.completed` (agent messages,
 * commands, file changes, errors), `error` (retries: "Reconnecting... 1/5 (...)"), then
 * `turn.completed` with the turn's `usage` or `turn.failed` with the fatal `error`. The
 * events never name the model, so the adapter reports the one it asked for (`--model`).
 */
interface CodexUsage {
  input_tokens?: unknown;
  output_tokens?: unknown;
}

const count = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0);

/** One line of output as a Codex event, when it is one. */
function codexEvent(line: string): Record<string, unknown> | undefined {
  const text = line.trim();
  if (!text.startsWith('{"type":')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The message of the last `turn.failed` event in `text`, bounded; undefined when there is none. */
export function codexTurnFailure(text: string): string | undefined {
  let message: string | undefined;
  for (const line of text.split('\n')) {
    const event = codexEvent(line);
    if (event?.type !== 'turn.failed') continue;
    const error = event.error as { message?: unknown } | undefined;
    message = (typeof error?.message === 'string' ? error.message : 'turn failed').slice(0, 300);
  }
  return message;
}

/**
 * The observer of one Codex run: adds up the `usage` of every `turn.completed` as the
 * lines arrive (input tokens count cached ones too, output tokens reasoning ones, as the
 * API counts them), prices them with `req.prices` for `model`, and stops the run once that
 * reaches `req.budgetUsd`. Codex reports usage per turn, not per model call, so a budget
 * stops a run at the end of a turn: one turn can overshoot it.
 */
export function codexObserver(
  req: Pick<AgentRunRequest, 'budgetUsd' | 'prices'>,
  model: string | undefined,
): RunObserver {
  const started = performance.now();
  const tokens = { prompt: 0, completion: 0 };
  let turns = 0;
  let partial = '';
  const costNow = () => (model === undefined ? undefined : costOf(req.prices, model, tokens));
  const line = (text: string): WatchStop | undefined => {
    const event = codexEvent(text);
    if (event?.type !== 'turn.completed') return undefined;
    const usage = (event.usage ?? {}) as CodexUsage;
    tokens.prompt += count(usage.input_tokens);
    tokens.completion += count(usage.output_tokens);
    turns += 1;
    const cost = costNow();
    if (req.budgetUsd === undefined || cost === undefined || cost < req.budgetUsd) return undefined;
    return {
      reason: `stopped at the money budget: spent ${formatUsd(cost)} of ${formatUsd(req.budgetUsd)}`,
      budgetExceeded: true,
    };
  };
  return {
    output(chunk) {
      const lines = `${partial}${chunk}`.split('\n');
      partial = lines.pop() ?? '';
      let stop: WatchStop | undefined;
      for (const text of lines) stop ??= line(text);
      return stop;
    },
    report(): RunReport {
      // The last line may have come without its newline.
      if (partial !== '') line(partial);
      partial = '';
      if (turns === 0) return {};
      const cost = costNow();
      if (model === undefined) return { tokens: { ...tokens } };
      const call: ModelCall = {
        provider: 'codex',
        model,
        promptTokens: tokens.prompt,
        completionTokens: tokens.completion,
        latencyMs: Math.round(performance.now() - started),
        ...(cost === undefined ? {} : { costUsd: cost }),
        outcome: 'ok',
      };
      return { tokens: { ...tokens }, model, ...(cost === undefined ? {} : { costUsd: cost }), modelCalls: [call] };
    },
  };
}
