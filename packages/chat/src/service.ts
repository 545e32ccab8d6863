import { randomUUID } from 'node:crypto';
import type { Config } from '@codefleet/config';
import type { Logger } from '@codefleet/log';
import type { Queue } from '@codefleet/queue';
import type { Requester } from '@codefleet/requester';
import type { RunStore } from '@codefleet/store';
import { checkAccess, type PermissionCheck } from './access.js';
import { chatAnswer } from './chat-answer.js';
import { isAnswerRoute, isCodeRoute } from './commands.js';
import { agentLocality } from './local-endpoint.js';
import { defaultModelFactory, type ModelFactory } from './local-model.js';
import { readJobMeta } from './job-meta.js';
import { operate } from './ops.js';
import type { ChatMessage, ChatOutcome, ChatService } from './port.js';
import { chooseRepo, repoInText } from './repo-choice.js';
import { messageKey } from './request-keys.js';
import { createRouter, type Routed } from './router.js';
import { enqueueWork, followUpOf, threadJobOf, type ThreadJob, type WorkDeps, type WorkOrder } from './work.js';

/** What the chat service works with; all passed in, nothing global. */
export interface ChatServiceDeps {
  queue: Queue;
  store: RunStore;
  /** Told `queued` for each new job (the platform's requester, or the CLI's). */
  requester: Requester;
  config: Config;
  log: Logger;
  /** GitHub permission of a login on `owner/name` (GithubForge.permission); without it no GitHub work starts. */
  permission?: PermissionCheck;
  /** Clients of the classifier's and the chat's model servers; default: the real ones. */
  models?: ModelFactory;
  /** The environment the config was loaded with (`LoadedConfig.env`): aider's `OLLAMA_API_BASE`. */
  env?: Readonly<Record<string, string>>;
  now?: () => Date;
  /** New job ids; default `crypto.randomUUID`. */
  id?: () => string;
}

/**
 * The chat service: routes a message ({@link createRouter}) and carries the route out.
 * - CODE, CODE1–CODE3: a change job with the route's agent, profile or escalation chain, once per message (dedup on the
 *   message key), continuing the thread's branch when its earlier job finished;
 * - PLAN, ANALYZE, RESEARCH: a read-only answer job, only with a local agent;
 * - OPS: the fleet's own operations, without a model;
 * - CHAT: a short answer from the local chat model.
 * Work (and cancel/retry) needs access to the repository: a mapped GitHub login with write
 * permission, or the allow-list for local repositories. CHAT is open to everyone.
 */
export function createChatService(deps: ChatServiceDeps): ChatService {
  const models = deps.models ?? defaultModelFactory;
  const service: Service = {
    deps,
    models,
    routeText: createRouter({ router: deps.config.router, models, log: deps.log }),
    work: {
      queue: deps.queue,
      store: deps.store,
      requester: deps.requester,
      log: deps.log,
      now: deps.now ?? (() => new Date()),
      id: deps.id ?? (() => randomUUID()),
    },
  };
  return { handle: (message) => handleMessage(service, message) };
}

/** What every step of handling a message reads: the deps, and what the service builds from them once. */
interface Service {
  deps: ChatServiceDeps;
  models: ModelFactory;
  routeText: ReturnType<typeof createRouter>;
  work: WorkDeps;
}

async function handleMessage(service: Service, message: ChatMessage): Promise<ChatOutcome> {
  const { deps, models } = service;
  // A redelivery of a message that already made a job is told so before anything else: a
  // second routing (the classifier may answer differently) must not answer it twice.
  const made = await alreadyMade(deps, message);
  if (made !== undefined) return made;
  const routed = await service.routeText(message.text, message.policy);
  const { route } = routed;
  const reply = (text: string): ChatOutcome => ({ kind: 'reply', text, route });
  if (route.name === 'CHAT') return reply(await chatAnswer(routed.text, deps.config.router, models, deps.log));
  if (route.name === 'OPS')
    return reply(
      await operate(routed.text, message, {
        queue: deps.queue,
        store: deps.store,
        ...(deps.permission ? { permission: deps.permission } : {}),
      }),
    );
  return startWork(service, message, routed, route.name);
}

/**
 * A work route (CODE…, PLAN, ANALYZE, RESEARCH): its agent, its task and its repository, then
 * the job. `name` is the route's name, narrowed by the caller to the routes that carry an agent.
 */
async function startWork(
  service: Service,
  message: ChatMessage,
  routed: Routed,
  name: keyof Config['router']['routes'],
): Promise<ChatOutcome> {
  const { config, log } = service.deps;
  const { route } = routed;
  const reply = (text: string): ChatOutcome => ({ kind: 'reply', text, route });
  const named = repoInText(routed.text);
  const task = named.text;
  // A route may name an agent, a profile or an escalation chain; a change route that names
  // none runs agents.escalation when it has tiers, as a job that names no agent does.
  const agent =
    config.router.routes[name].agent ??
    (isCodeRoute(route.name) && config.agents.escalation.length > 0 ? 'escalation' : config.agents.default);
  if (isAnswerRoute(route.name)) {
    const locality = agentLocality(agent, config, service.deps.env);
    if (!locality.local) {
      log.info({ event: 'chat.refused_cloud', route: route.name, agent }, 'a read-only route would need a cloud model');
      return reply(
        `${route.name} runs only on a local model, and ${locality.reason}, so I didn't start it. An operator can set router.routes.${route.name}.agent to a local agent.`,
      );
    }
  }
  if (task === '')
    return reply(
      `Tell me what to do after the command, e.g. "/${route.name.toLowerCase()} add a --verbose flag repo=owner/name".`,
    );

  const mode = isCodeRoute(route.name) ? 'change' : 'answer';
  // Only CODE jobs become a thread's job, so only they follow one up.
  const thread = mode === 'change' ? await threadJobOf(message, service.deps.store) : undefined;
  const choice = chooseRepo({
    inText: named.repo ?? message.repo,
    thread: thread?.repo,
    rule: routed.repo,
    hints: message.repoHints,
  });
  if (choice.status === 'invalid') return reply(`I can't use the repository "${choice.repo}": ${choice.problem}.`);
  if (choice.status === 'none') return { kind: 'ask_repo', choices: knownRepos(config), route };
  return placeWork(service, { message, route, repo: choice.repo, task, agent, mode }, thread);
}

/** Enqueues the order once the sender may work on its repository and no job of its thread is still busy. */
async function placeWork(service: Service, order: WorkOrder, thread: ThreadJob | undefined): Promise<ChatOutcome> {
  const { deps } = service;
  const { message, route, repo } = order;
  const access = await checkAccess(repo, message.access, deps.permission);
  if (!access.allowed) {
    deps.log.info(
      { event: 'chat.refused', route: route.name, repo, user: message.user, reason: access.reason },
      'sender may not start work',
    );
    return { kind: 'refused', text: access.text, route };
  }
  const earlier = await deps.store.lookupRequest(messageKey(message));
  if (earlier !== undefined && earlier !== '')
    return { kind: 'enqueued', jobId: earlier, route, deduplicated: true, repo };

  const followUp = followUpOf(thread, repo);
  if (followUp.status === 'busy') {
    // Not bound to the message key: the same message, handed in again once the job ended, is new work.
    if (message.deferFollowUp === true) {
      deps.log.info(
        { event: 'chat.deferred', job_id: followUp.jobId, repo },
        "a follow-up waits for the thread's running job",
      );
      return { kind: 'deferred', jobId: followUp.jobId, route, repo };
    }
    return {
      kind: 'reply',
      text: `Job ${followUp.jobId} of this thread is still queued or running, so I didn't start another on its branch. Send this message again when it has finished.`,
      route,
    };
  }
  return enqueueWork(order, followUp, service.work);
}

/** The outcome of a redelivered message whose job was already made; undefined when none was. */
async function alreadyMade(deps: ChatServiceDeps, message: ChatMessage): Promise<ChatOutcome | undefined> {
  const jobId = await deps.store.lookupRequest(messageKey(message));
  if (jobId === undefined || jobId === '') return undefined;
  const meta = await readJobMeta(deps.store, jobId);
  // No meta yet: the first delivery is still being handled; its bind decides in placeWork.
  if (meta?.route === undefined) return undefined;
  deps.log.info({ event: 'chat.deduplicated', job_id: jobId }, 'a redelivered message; its job exists');
  return { kind: 'enqueued', jobId, route: meta.route, deduplicated: true, repo: meta.repo };
}

/** Repositories the config names (rules, channels, defaults): the choices offered when none was given. */
function knownRepos(config: Config): string[] {
  const repos = [
    ...config.router.rules.flatMap((r) => (r.repo === undefined ? [] : [r.repo])),
    ...Object.values(config.slack.channels).map((c) => c.repo),
    ...(config.slack.default_repo === undefined ? [] : [config.slack.default_repo]),
    ...(config.line.default_repo === undefined ? [] : [config.line.default_repo]),
  ];
  return [...new Set(repos)].slice(0, 10);
}
