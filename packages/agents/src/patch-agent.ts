import { applyPatch, parsePatch } from '@codefleet/patch';
import { changedFiles, headCommit } from './changed-files.js';
import { withoutForgeCredentials } from './env.js';
import { applyOptionsFor, type PatchPolicy } from './patch-policy.js';
import type { Agent, AgentRunRequest, AgentRunResult } from './port.js';

/**
 * The patch agent: a job that carries a patch (a chat coder wrote it) is applied by the
 * patch engine instead of running a model, on pass 1 only; pass 2 has nothing more to add
 * (`no_changes`, which the pipeline accepts for the test pass), and the verification loop
 * checks it like any other attempt. A patch that does not parse, or a command that fails,
 * is `failed` with the engine's words as output, which the pipeline feeds back; a second
 * attempt applies the same patch again, so a patch that failed once fails the job.
 */
export function createPatchAgent(patch: string, options: { timeoutMs?: number; policy?: PatchPolicy } = {}): Agent {
  return {
    name: 'patch',
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    async run(req: AgentRunRequest): Promise<AgentRunResult> {
      const started = performance.now();
      const env = withoutForgeCredentials(req.env);
      const before = await headCommit(req.workdir, env, req.gitPath);
      const finish = async (
        exitCode: number,
        outputTail: string,
        outcome: AgentRunResult['outcome'],
        detail?: string,
      ): Promise<AgentRunResult> => ({
        exitCode,
        signal: null,
        timedOut: false,
        durationMs: Math.round(performance.now() - started),
        outputTail,
        changedFiles: await changedFiles(req.workdir, env, { since: before, gitPath: req.gitPath }).catch(() => []),
        outcome,
        ...(detail === undefined ? {} : { detail }),
      });
      if (req.pass === 'test')
        return finish(
          0,
          'the patch agent adds nothing in the test pass',
          'no_changes',
          'a patch job has no test pass of its own',
        );
      let commands;
      try {
        commands = parsePatch(patch).commands;
      } catch (error) {
        return finish(1, error instanceof Error ? error.message : String(error), 'failed', 'the patch does not parse');
      }
      const plan: string[] = [];
      // Without a policy (tests, embedders): stop at the first failure, as before config.
      const apply = applyOptionsFor(options.policy, req.workdir, env, (line) => plan.push(line), 'stop');
      const result = await applyPatch(commands, {
        ...apply,
        shellTimeoutMs: Math.min(req.timeoutMs, apply.shellTimeoutMs ?? 300_000),
        ...(req.runner === undefined ? {} : { runner: req.runner }),
        ...(req.gitPath === undefined ? {} : { gitPath: req.gitPath }),
      });
      const lines = [
        ...plan,
        ...result.results.map(
          (r) =>
            `${r.status} ${r.command.type} ${r.command.action}${r.error ? `: ${r.error}` : ''}${r.output ? `\n${r.output.trim()}` : ''}`,
        ),
        result.summary,
      ];
      if (result.failed > 0) return finish(1, lines.join('\n').slice(-8_192), 'failed', result.summary);
      const done = await finish(0, lines.join('\n').slice(-8_192), 'changed');
      return done.changedFiles.length === 0
        ? { ...done, outcome: 'no_changes', detail: 'the patch changed nothing' }
        : done;
    },
  };
}
