import type { RouterConfig } from '@codefleet/config';
import { graphemePrefix, type JobRoute } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { classify } from './classifier.js';
import { explicitCommand, isCodeRoute } from './commands.js';
import { isLocalEndpoint } from './local-endpoint.js';
import { defaultModelFactory, modelSpecOf, type ModelFactory } from './local-model.js';
import type { ChatMessage } from './port.js';
import { compileRules, type RuleBook } from './rules.js';

/** What {@link route} needs besides the text. */
export interface RouteOptions {
  router: RouterConfig;
  /** Restrictions of the platform the message came from (LINE). */
  policy?: ChatMessage['policy'];
  /** The rules compiled once by {@link createRouter}; compiled per call when absent. */
  rules?: RuleBook;
  /** Client of the classifier's model server; default: the real Ollama/OpenAI clients. */
  models?: ModelFactory;
  /** `router.decided` is logged here. */
  log?: Logger;
}

/** The router's decision: the recorded route, the task text without the command, and a rule's repository. */
export interface Routed {
  route: JobRoute;
  /** The message text with the explicit command taken off (the whole text otherwise). */
  text: string;
  /** The repository the matching rule names. */
  repo?: string;
}

/**
 * Decides the route of a message, in this order:
 * 1. the platform's forced route (LINE: CHAT), unless it allows explicit `/code…` and the
 *    message starts with one;
 * 2. an explicit command at the start (`/code`, `/code1`–`/code3`, `/plan`, `/analyze`, `/ops`,
 *    `/research`, `/chat`): confidence 1, the command word taken off the text;
 * 3. `router.rules`, first match wins, with the rule's confidence (and repository);
 * 4. the classifier on a local model, accepted at `min_confidence` or above; never asked when
 *    its host is not local; a malformed reply or an unreachable server falls through;
 * 5. CHAT, the safe fallback.
 * Every decision is logged as `router.decided`.
 */
export async function route(text: string, options: RouteOptions): Promise<Routed> {
  const routed = await decide(text, options);
  options.log?.info(
    {
      event: 'router.decided',
      route: routed.route.name,
      source: routed.route.source,
      confidence: routed.route.confidence,
      reason: routed.route.reason,
    },
    `routed to ${routed.route.name} (${routed.route.source})`,
  );
  return routed;
}

/** A router over one config: the rules compiled once. */
export function createRouter(
  options: Omit<RouteOptions, 'rules' | 'policy'>,
): (text: string, policy?: ChatMessage['policy']) => Promise<Routed> {
  const rules = compileRules(options.router.rules);
  return (text, policy) => route(text, { ...options, rules, ...(policy === undefined ? {} : { policy }) });
}

async function decide(text: string, options: RouteOptions): Promise<Routed> {
  const { router, policy } = options;
  const command = explicitCommand(text);
  if (policy?.forceRoute !== undefined) {
    if (command !== undefined && policy.allowExplicitCode === true && isCodeRoute(command.route)) {
      return {
        route: {
          name: command.route,
          source: 'command',
          confidence: 1,
          reason: `explicit ${command.command} (allowed on this platform)`,
        },
        text: command.rest,
      };
    }
    return {
      route: { name: policy.forceRoute, source: 'forced', confidence: 1, reason: 'this platform takes one route only' },
      text: text.trim(),
    };
  }
  if (command !== undefined) {
    return {
      route: { name: command.route, source: 'command', confidence: 1, reason: `explicit ${command.command}` },
      text: command.rest,
    };
  }
  const trimmed = text.trim();
  const rules = options.rules ?? compileRules(router.rules);
  const matched = rules.match(trimmed, (index) => {
    options.log?.warn(
      { event: 'router.rule_timed_out', rule: index },
      `router.rules[${index}] ran too long on a message and was skipped`,
    );
  });
  if (matched !== undefined) {
    return {
      route: {
        name: matched.rule.route,
        source: 'rule',
        confidence: matched.rule.confidence,
        reason: `router.rules[${matched.index}] matched`,
      },
      text: trimmed,
      ...(matched.rule.repo === undefined ? {} : { repo: matched.rule.repo }),
    };
  }
  const fallback = (reason: string): Routed => ({
    route: { name: 'CHAT', source: 'fallback', confidence: 0, reason: graphemePrefix(reason, 500) },
    text: trimmed,
  });
  const classifier = router.classifier;
  if (!classifier.enabled) return fallback('no command or rule matched; the classifier is off');
  if (!isLocalEndpoint(classifier.host, router.local_hosts))
    return fallback('no command or rule matched; the classifier is not asked: its host is not local');
  const said = await classify(
    trimmed,
    modelSpecOf(classifier),
    options.models ?? defaultModelFactory,
    classifier.timeout_seconds * 1000,
  );
  switch (said.status) {
    case 'unavailable':
      return fallback(`classifier unavailable: ${said.problem}`);
    case 'malformed':
      return fallback(`classifier reply malformed: ${said.problem}`);
    case 'classified':
      if (said.confidence < classifier.min_confidence) {
        return fallback(`classifier said ${said.route} at ${said.confidence}, below ${classifier.min_confidence}`);
      }
      return {
        route: {
          name: said.route,
          source: 'classifier',
          confidence: said.confidence,
          reason: graphemePrefix(said.reason || `classified as ${said.route}`, 500),
        },
        text: trimmed,
      };
  }
}
