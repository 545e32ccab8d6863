import { checkRepoRef, type Job } from '@codefleet/core';
import type { ChatMessage } from './port.js';

/** A GitHub role, as the forge's permission check answers (`none` for no access). */
export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';

/** `login`'s role on the GitHub repository `repo` (`owner/name`): the label path's check. */
export type PermissionCheck = (repo: string, login: string) => Promise<Permission | string>;

/** Roles that may start work (the label path's rule). */
const mayWork: readonly string[] = ['admin', 'maintain', 'write'];

/** Whether the sender may start work on (or cancel, retry work on) `repo`, and if not, why in polite words. */
export type AccessVerdict = { allowed: true } | { allowed: false; text: string; reason: string };

/**
 * Who may start work: on a GitHub repository, a sender mapped to a GitHub login with write,
 * maintain or admin permission (asked of GitHub each time, as the label path does); on a
 * local repository (a path or a git URL), a sender on the platform's allow-list. The
 * platform's own user id or display name proves nothing.
 */
export async function checkAccess(
  repo: string,
  access: ChatMessage['access'],
  permission: PermissionCheck | undefined,
): Promise<AccessVerdict> {
  const ref = checkRepoRef(repo);
  if (typeof ref === 'string')
    return { allowed: false, text: `I can't use the repository "${repo}": ${ref}.`, reason: `bad repo: ${ref}` };
  if (ref.kind !== 'github') {
    return access.allowedLocal
      ? { allowed: true }
      : {
          allowed: false,
          text: "Sorry, you're not on the list of people who may start work on local repositories here, so I didn't start anything.",
          reason: 'not on allowed_users',
        };
  }
  if (access.login === undefined) {
    return {
      allowed: false,
      text: 'Sorry, I can only start work for people whose chat account is linked to a GitHub login with write access. Ask an operator to add you, and nothing was started meanwhile.',
      reason: 'no GitHub login mapped',
    };
  }
  if (permission === undefined) {
    return {
      allowed: false,
      text: `Sorry, I can't check GitHub permissions from here, so I didn't start work on ${repo}.`,
      reason: 'no permission check configured',
    };
  }
  let role: string;
  try {
    role = await permission(repo, access.login);
  } catch {
    return {
      allowed: false,
      text: `I couldn't check your access to ${repo} on GitHub just now, so I didn't start anything. Please try again in a moment.`,
      reason: 'permission check failed',
    };
  }
  return mayWork.includes(role)
    ? { allowed: true }
    : {
        allowed: false,
        text: `Sorry, @${access.login} needs write access to ${repo} for me to work on it, so nothing was started.`,
        reason: `permission ${role}`,
      };
}

/**
 * Whether the sender may cancel or retry `job`: the one who asked for it (the same GitHub
 * login, or the same user on the same chat platform), or anyone who may start work on its
 * repository.
 */
export async function checkManage(
  job: Pick<Job, 'repo' | 'requested_by' | 'source'>,
  message: Pick<ChatMessage, 'platform' | 'user' | 'access'>,
  permission: PermissionCheck | undefined,
): Promise<AccessVerdict> {
  const samePlatform =
    job.source.kind === 'chat' ? job.source.platform === message.platform : job.source.kind === message.platform;
  if (
    (message.access.login !== undefined && job.requested_by === message.access.login) ||
    (samePlatform && job.requested_by === message.user)
  ) {
    return { allowed: true };
  }
  return checkAccess(job.repo, message.access, permission);
}
