import { checkRepoRef } from '@codefleet/core';

/** How a message's repository was chosen, or that it could not be. */
export type RepoChoice =
  | { status: 'chosen'; repo: string; via: 'message' | 'thread' | 'rule' | 'hint' }
  | { status: 'invalid'; repo: string; problem: string }
  | { status: 'none' };

// `repo=owner/name` or `repo=/abs/path` anywhere in the text, as one word.
const repoWord = /(?:^|\s)repo=(\S+)/i;

/** The `repo=` word of a message and the text without it. */
export function repoInText(text: string): { repo?: string; text: string } {
  const match = repoWord.exec(text);
  if (match === null || match[1] === undefined) return { text };
  return {
    repo: match[1],
    text: `${text.slice(0, match.index)} ${text.slice(match.index + match[0].length)}`.replace(/[ \t]+/g, ' ').trim(),
  };
}

/** Where a message's repository may come from, most specific first. */
export interface RepoSources {
  /** `repo=` in the text. */
  inText?: string | undefined;
  /** The repository of the thread's earlier job: a conversation stays on its repository. */
  thread?: string | undefined;
  /** The matching rule's. */
  rule?: string | undefined;
  /** The platform's suggestions: the channel's, then the default. */
  hints: readonly string[];
}

/**
 * The repository of a message: `repo=` in its text, else the thread's earlier job's, else
 * the matching rule's, else the first usable hint. A repository named in the text that
 * core's check refuses is `invalid` (the user is told why), not silently replaced.
 */
export function chooseRepo(sources: RepoSources): RepoChoice {
  const { inText, thread, rule: ruleRepo, hints } = sources;
  if (inText !== undefined) {
    const checked = checkRepoRef(inText);
    return typeof checked === 'string'
      ? { status: 'invalid', repo: inText, problem: checked }
      : { status: 'chosen', repo: inText, via: 'message' };
  }
  if (thread !== undefined && typeof checkRepoRef(thread) !== 'string')
    return { status: 'chosen', repo: thread, via: 'thread' };
  if (ruleRepo !== undefined && typeof checkRepoRef(ruleRepo) !== 'string')
    return { status: 'chosen', repo: ruleRepo, via: 'rule' };
  const hint = hints.find((h) => typeof checkRepoRef(h) !== 'string');
  return hint === undefined ? { status: 'none' } : { status: 'chosen', repo: hint, via: 'hint' };
}
