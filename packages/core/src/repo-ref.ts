import { InvalidJobError } from './errors.js';
import { previewValue } from './text.js';

/** Where a job's repository lives, as the forge and workspace layers need to know it. */
export type RepoRef =
  { kind: 'github'; owner: string; name: string } | { kind: 'path'; path: string } | { kind: 'url'; url: string };

/** Longest accepted `repo` string; keeps derived idempotency keys under their limit. */
export const maxRepoLength = 400;

// GitHub: owner 1..39 alphanumerics or single inner hyphens; repo 1..100 of [A-Za-z0-9._-].
const githubRef = /^([A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38})\/([A-Za-z0-9._-]{1,100})$/;
// scp-like `user@host:path`. The user part is required so `C:/x` or `host:path` typos are
// not mistaken for remotes, and it may not start with `-` (git option injection).
const scpRef = /^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?:(?!\/\/)\S+$/;
const urlSchemes = new Set(['https:', 'http:', 'ssh:', 'git:', 'file:']);
// eslint-disable-next-line no-control-regex -- control characters are exactly what we reject
const controlOrSpace = /[\u0000-\u0020\u007f]/;

/** Why a repo string was refused. */
const credentialsMessage =
  'credentials in the repository URL are refused: credentials go through the git credential helper, never the URL';

/**
 * Checks a `repo` string and says what it refers to, or why it is refused (a string).
 * Accepted: GitHub `owner/name`, an absolute POSIX path, or a git URL (https, http, ssh,
 * git, file, or scp-like `git@host:path`).
 */
export function checkRepoRef(repo: string): RepoRef | string {
  if (repo.length === 0) return 'expected non-empty repository';
  if (repo.length > maxRepoLength) return `expected at most ${maxRepoLength} characters`;
  if (controlOrSpace.test(repo)) return 'expected no whitespace or control characters';
  const github = githubRef.exec(repo);
  if (github !== null) {
    const name = github[2] ?? '';
    if (name === '.' || name === '..') return 'expected a repository name other than "." or ".."';
    return { kind: 'github', owner: github[1] ?? '', name };
  }
  if (repo.startsWith('/')) {
    if (repo.split('/').includes('..')) return 'expected a path without ".." segments';
    return { kind: 'path', path: repo };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(repo)) return checkUrl(repo);
  if (scpRef.test(repo)) return { kind: 'url', url: repo };
  return 'expected GitHub owner/name, an absolute path, or a git URL (https, ssh, git, file or git@host:path)';
}

function checkUrl(repo: string): RepoRef | string {
  let url: URL;
  try {
    url = new URL(repo);
  } catch {
    return 'expected a valid git URL';
  }
  if (!urlSchemes.has(url.protocol))
    return `expected a git URL scheme (https, http, ssh, git, file), got ${url.protocol}`;
  // ssh carries a login name (git@) that is not a secret; anything else in the user-info
  // part of a URL is a token that would end up in logs and in `.git/config`.
  const loginOnly = url.protocol === 'ssh:' && url.password === '';
  if ((url.username !== '' || url.password !== '') && !loginOnly) return credentialsMessage;
  if (url.protocol !== 'file:' && url.hostname === '') return 'expected a host in the git URL';
  return { kind: 'url', url: repo };
}

/** Parses a `repo` string (see {@link checkRepoRef}); throws `InvalidJobError` when refused. */
export function parseRepoRef(repo: string): RepoRef {
  const checked = checkRepoRef(repo);
  if (typeof checked !== 'string') return checked;
  throw new InvalidJobError(`invalid job: repo: ${checked}, got ${previewValue(repo)}`, [
    { path: 'repo', message: checked },
  ]);
}

/**
 * Why `name` is not a valid git branch name (rules of `git check-ref-format --branch`),
 * or `undefined` when it is.
 */
export function branchNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'expected non-empty branch name';
  if (name.length > 255) return 'expected at most 255 characters';
  if (controlOrSpace.test(name)) return 'expected no whitespace or control characters';
  if (/[~^:?*[\\]/.test(name)) return 'expected none of ~ ^ : ? * [ \\';
  if (name.startsWith('-')) return 'expected no leading "-"';
  if (name.includes('..')) return 'expected no ".."';
  if (name.includes('@{') || name === '@') return 'expected no "@{" and not "@"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//'))
    return 'expected no leading, trailing or double "/"';
  if (name.endsWith('.')) return 'expected no trailing "."';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'expected no path component starting with "."';
    if (part.endsWith('.lock')) return 'expected no path component ending with ".lock"';
  }
  return undefined;
}
