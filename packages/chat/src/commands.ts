import type { RouteName } from '@codefleet/core';

/** The explicit commands, as typed at the start of a message, and the route each names. */
export const explicitCommands: Readonly<Record<string, RouteName>> = {
  '/code': 'CODE',
  '/code1': 'CODE1',
  '/code2': 'CODE2',
  '/code3': 'CODE3',
  '/plan': 'PLAN',
  '/analyze': 'ANALYZE',
  '/ops': 'OPS',
  '/research': 'RESEARCH',
  '/chat': 'CHAT',
};

// A whole word: `/code1` is its own command and `/codex` is none.
const commandAtStart = /^\s*(\/[a-z0-9]+)(?=\s|$)/i;

/** The explicit command a message starts with and the text after it, or undefined. */
export function explicitCommand(text: string): { route: RouteName; command: string; rest: string } | undefined {
  const match = commandAtStart.exec(text);
  const command = match?.[1]?.toLowerCase();
  const route = command === undefined ? undefined : explicitCommands[command];
  if (match === null || command === undefined || route === undefined) return undefined;
  return { route, command, rest: text.slice(match[0].length).trim() };
}

/** True for the routes that change code and open a pull request. */
export function isCodeRoute(route: RouteName): route is 'CODE' | 'CODE1' | 'CODE2' | 'CODE3' {
  return route === 'CODE' || route === 'CODE1' || route === 'CODE2' || route === 'CODE3';
}

/** True for the read-only routes whose answer comes from an agent on a copy of the repository. */
export function isAnswerRoute(route: RouteName): route is 'PLAN' | 'ANALYZE' | 'RESEARCH' {
  return route === 'PLAN' || route === 'ANALYZE' || route === 'RESEARCH';
}
