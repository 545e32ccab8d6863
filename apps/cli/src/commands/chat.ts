import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from 'commander';
import { createChatService, type ChatMessage, type ChatOutcome } from '@codefleet/chat';
import { checkRepoRef } from '@codefleet/core';
import { cliRequester } from '@codefleet/requester';
import { gitEnvFrom, type Runtime } from '../runtime.js';
import { normalizeRepo } from './jobs.js';
import { checkLocalRepo } from './local-repo.js';

/** Options of `codefleet chat`. */
export interface ChatCommandOptions {
  /** The repository, as `codefleet enqueue --repo` takes it. */
  repo?: string;
}

/** What `codefleet chat` prints, and its exit code. */
export interface ChatCommandResult {
  out: string[];
  err: string[];
  code: number;
}

/**
 * `codefleet chat "<message>"`: the chat bot's router and routes from a terminal, for trying
 * them without a chat app. The message takes the route a Slack mention would (commands,
 * rules, the local classifier, else CHAT) and is carried out by the same chat service. The
 * sender is the local user, on the allow-list for local repositories; a GitHub repository
 * needs a mapped login, which the terminal has none of (use `codefleet enqueue` for those).
 * Repository: `repo=` in the message, else `--repo`, else the rules, else the working
 * directory when it is the top of a git repository. Jobs are CLI jobs (`source.kind: cli`),
 * reported by the CLI requester: the terminal watches them with `codefleet show`.
 */
export async function chat(
  rt: Runtime,
  text: string,
  options: ChatCommandOptions,
  cwd: string,
): Promise<ChatCommandResult> {
  if (text.trim() === '')
    throw new InvalidArgumentError(
      'the message is empty: say what you want, e.g. codefleet chat "/code add a --verbose flag"',
    );
  const gitEnv = gitEnvFrom(rt.loaded.env);
  let repo: string | undefined;
  if (options.repo !== undefined) {
    if (options.repo.trim() === '')
      throw new InvalidArgumentError('--repo is empty: give a local path, a git URL, or GitHub owner/name');
    repo = normalizeRepo(options.repo, cwd);
    const ref = checkRepoRef(repo);
    if (typeof ref !== 'string' && ref.kind === 'path') {
      const problem = await checkLocalRepo(ref.path, gitEnv);
      if (problem !== undefined) throw new InvalidArgumentError(`--repo ${ref.path}: ${problem}`);
    }
  }
  const hints = (await checkLocalRepo(cwd, gitEnv)) === undefined ? [cwd] : [];
  const id = randomUUID();
  const message: ChatMessage = {
    platform: 'cli',
    channel: 'cli',
    thread: id,
    messageId: id,
    user: rt.loaded.env.USER ?? 'cli',
    text,
    access: { allowedLocal: true },
    repoHints: hints,
    ...(repo === undefined ? {} : { repo }),
  };
  // One-shot output is for the person at the terminal: the decision is printed below, so
  // info lines (router.decided) are kept out of it unless debug logging was asked for.
  const level = rt.config.logging.level === 'info' ? 'warn' : rt.config.logging.level;
  const service = createChatService({
    queue: rt.queue,
    store: rt.store,
    requester: cliRequester,
    config: rt.config,
    log: rt.log.child({ command: 'chat' }, { level }),
    env: rt.loaded.env,
  });
  return describe(await service.handle(message));
}

function describe(outcome: ChatOutcome): ChatCommandResult {
  const { route } = outcome;
  const decided = `route: ${route.name} (${route.source}${route.source === 'command' || route.source === 'forced' ? '' : `, confidence ${route.confidence}`})`;
  switch (outcome.kind) {
    case 'enqueued':
      return {
        out: [
          outcome.deduplicated ? `already queued as ${outcome.jobId}` : `enqueued ${outcome.jobId}`,
          decided,
          `repository: ${outcome.repo}`,
          `watch it: codefleet show ${outcome.jobId} (a worker runs it: codefleet worker)`,
        ],
        err: [],
        code: 0,
      };
    case 'reply':
      return { out: [outcome.text], err: [decided], code: 0 };
    case 'ask_repo':
      return {
        out: [],
        err: [
          'which repository? add repo=<path|owner/name> to the message, or --repo, or run it inside the repository',
          ...(outcome.choices.length === 0 ? [] : [`known: ${outcome.choices.join(', ')}`]),
        ],
        code: 1,
      };
    case 'refused':
      return { out: [], err: [outcome.text], code: 1 };
    case 'deferred':
      // Only a producer that keeps follow-ups is answered so; `codefleet chat` keeps none.
      return {
        out: [],
        err: [`job ${outcome.jobId} of this thread is still queued or running; send this again when it has finished`],
        code: 1,
      };
  }
}
