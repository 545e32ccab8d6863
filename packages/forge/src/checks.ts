// Input checks shared by every adapter. The limits are GitHub's, applied everywhere so
// that a body accepted by the local forge in development is not refused in production.
import { CodefleetError, branchNameProblem, objectIdPattern, previewValue } from '@codefleet/core';
import type { CommentTarget, EnsurePullRequestRequest } from './port.js';

/** GitHub's limits: a title of 256 characters, a body (PR or comment) of 65 536. */
export const limits = { title: 256, body: 65_536, label: 50, taskKey: 200 } as const;

function reject(message: string): never {
  throw new CodefleetError('forge_rejected', message);
}

/** Throws `forge_rejected` unless `name` is a valid branch name (without `refs/heads/`). */
export function checkBranch(name: string, what = 'branch'): void {
  const problem = branchNameProblem(name);
  if (problem !== undefined) reject(`invalid ${what} name ${previewValue(name)}: ${problem}`);
}

/** Throws `forge_rejected` unless `sha` is a full hex object name (SHA-1 or SHA-256). */
export function checkSha(sha: string): void {
  if (!objectIdPattern.test(sha)) reject(`invalid expectedSha ${previewValue(sha)}: expected a full hex object name`);
}

/** Throws `forge_rejected` for a malformed target; returns its storage key (`pull:7`). */
export function targetKey(target: CommentTarget): string {
  if (target.kind === 'task') {
    if (target.key.length === 0 || target.key.length > limits.taskKey)
      reject(`invalid task key: expected 1-${limits.taskKey} characters`);
    return `task:${target.key}`;
  }
  if (target.kind !== 'issue' && target.kind !== 'pull')
    reject(`invalid target kind ${previewValue((target as { kind: unknown }).kind)}`);
  if (!Number.isSafeInteger(target.number) || target.number < 1)
    reject(`invalid ${target.kind} number ${previewValue(target.number)}`);
  return `${target.kind}:${target.number}`;
}

/** Throws `forge_rejected` when a comment or pull request body is over the limit. */
export function checkBody(body: string): void {
  if (body.length > limits.body) reject(`body too long: ${body.length} characters, the limit is ${limits.body}`);
}

/** Throws `forge_rejected` for a pull request request no forge would accept. */
export function checkPullRequestInput(req: EnsurePullRequestRequest): void {
  checkBranch(req.head, 'head branch');
  checkBranch(req.base, 'base branch');
  if (req.head === req.base) reject(`head and base are the same branch (${req.head})`);
  if (req.title.trim().length === 0) reject('pull request title is empty');
  if (req.title.length > limits.title)
    reject(`pull request title too long: ${req.title.length} characters, the limit is ${limits.title}`);
  checkBody(req.body);
}

/** Throws `forge_rejected` for an invalid label name; returns it trimmed. */
export function checkLabel(name: string): string {
  const trimmed = name.trim();
  // eslint-disable-next-line no-control-regex -- control characters are what we refuse
  if (trimmed.length === 0 || trimmed.length > limits.label || /[\u0000-\u001f\u007f]/.test(trimmed)) {
    reject(`invalid label ${previewValue(name)}: expected 1-${limits.label} printable characters`);
  }
  return trimmed;
}
