import { createHash } from 'node:crypto';

// The objects the GitHub STAND-IN answers with, shaped as GitHub's OpenAPI description
// requires (every required field, nullable ones as null): a client that reads a field
// GitHub always sends finds it here too. A forge test validates these against the
// description itself.

/** What the builders need to know about the server they describe. */
export interface ShapeContext {
  /** `http://127.0.0.1:<port>`: API base and web host at once. */
  base: string;
}

/** A stable positive id for a name, so one login or label has one id everywhere. */
export function idOf(kind: string, name: string): number {
  return (createHash('sha256').update(`${kind}:${name.toLowerCase()}`).digest().readUInt32BE(0) % 1_000_000_000) + 1;
}

const nodeId = (prefix: string, id: number) => `${prefix}_${Buffer.from(String(id)).toString('base64url')}`;

/** `simple-user`. */
export function user(ctx: ShapeContext, login: string): Record<string, unknown> {
  const id = idOf('user', login);
  const api = `${ctx.base}/users/${encodeURIComponent(login)}`;
  return {
    login,
    id,
    node_id: nodeId('U', id),
    avatar_url: `${ctx.base}/avatars/u/${id}`,
    gravatar_id: '',
    url: api,
    html_url: `${ctx.base}/${login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: login.endsWith('[bot]') ? 'Bot' : 'User',
    site_admin: false,
  };
}

/** `label`. */
export function label(ctx: ShapeContext, repo: string, name: string): Record<string, unknown> {
  const id = idOf('label', `${repo}/${name}`);
  return {
    id,
    node_id: nodeId('LA', id),
    url: `${ctx.base}/repos/${repo}/labels/${encodeURIComponent(name)}`,
    name,
    description: null,
    color: 'ededed',
    default: false,
  };
}

/** Facts of a repository the builders show. */
export interface RepoFacts {
  fullName: string;
  private: boolean;
  createdAt: string;
  openIssues: number;
}

/** `repository` (inside pull requests) and, with `full`, `full-repository`. */
export function repository(ctx: ShapeContext, facts: RepoFacts, full = false): Record<string, unknown> {
  const [owner = '', name = ''] = facts.fullName.split('/');
  const id = idOf('repo', facts.fullName);
  const api = `${ctx.base}/repos/${facts.fullName}`;
  const html = `${ctx.base}/${facts.fullName}`;
  const templated = (path: string) => `${api}/${path}`;
  return {
    id,
    node_id: nodeId('R', id),
    name,
    full_name: facts.fullName,
    owner: user(ctx, owner),
    private: facts.private,
    html_url: html,
    description: null,
    fork: false,
    url: api,
    archive_url: templated('{archive_format}{/ref}'),
    assignees_url: templated('assignees{/user}'),
    blobs_url: templated('git/blobs{/sha}'),
    branches_url: templated('branches{/branch}'),
    collaborators_url: templated('collaborators{/collaborator}'),
    comments_url: templated('comments{/number}'),
    commits_url: templated('commits{/sha}'),
    compare_url: templated('compare/{base}...{head}'),
    contents_url: templated('contents/{+path}'),
    contributors_url: templated('contributors'),
    deployments_url: templated('deployments'),
    downloads_url: templated('downloads'),
    events_url: templated('events'),
    forks_url: templated('forks'),
    git_commits_url: templated('git/commits{/sha}'),
    git_refs_url: templated('git/refs{/sha}'),
    git_tags_url: templated('git/tags{/sha}'),
    git_url: `git:${html.replace(/^https?:/, '')}.git`,
    issue_comment_url: templated('issues/comments{/number}'),
    issue_events_url: templated('issues/events{/number}'),
    issues_url: templated('issues{/number}'),
    keys_url: templated('keys{/key_id}'),
    labels_url: templated('labels{/name}'),
    languages_url: templated('languages'),
    merges_url: templated('merges'),
    milestones_url: templated('milestones{/number}'),
    notifications_url: templated('notifications{?since,all,participating}'),
    pulls_url: templated('pulls{/number}'),
    releases_url: templated('releases{/id}'),
    ssh_url: `git@${new URL(ctx.base).host}:${facts.fullName}.git`,
    stargazers_url: templated('stargazers'),
    statuses_url: templated('statuses/{sha}'),
    subscribers_url: templated('subscribers'),
    subscription_url: templated('subscription'),
    tags_url: templated('tags'),
    teams_url: templated('teams'),
    trees_url: templated('git/trees{/sha}'),
    clone_url: `${html}.git`,
    mirror_url: null,
    hooks_url: templated('hooks'),
    svn_url: html,
    homepage: null,
    language: null,
    forks_count: 0,
    forks: 0,
    stargazers_count: 0,
    watchers_count: 0,
    watchers: 0,
    size: 0,
    default_branch: 'main',
    open_issues_count: facts.openIssues,
    open_issues: facts.openIssues,
    has_issues: true,
    has_projects: true,
    has_wiki: true,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    license: null,
    visibility: facts.private ? 'private' : 'public',
    pushed_at: facts.createdAt,
    created_at: facts.createdAt,
    updated_at: facts.createdAt,
    ...(full ? { network_count: 0, subscribers_count: 0 } : {}),
  };
}

/** An issue as the stand-in keeps it. */
export interface IssueFacts {
  number: number;
  title: string;
  body: string;
  user: { login: string };
  labels: { name: string }[];
  state: 'open' | 'closed';
  locked: boolean;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  comments: number;
  /** Set when this "issue" is a pull request, as GitHub's issues API shows one. */
  pull?: boolean;
  /** When that pull request was merged (`pull_request.merged_at`). */
  pull_merged_at?: string | null;
}

/** `issue`. */
export function issue(ctx: ShapeContext, repo: string, facts: IssueFacts): Record<string, unknown> {
  const id = idOf('issue', `${repo}#${facts.number}`);
  const api = `${ctx.base}/repos/${repo}/issues/${facts.number}`;
  return {
    id,
    node_id: nodeId('I', id),
    url: api,
    repository_url: `${ctx.base}/repos/${repo}`,
    labels_url: `${api}/labels{/name}`,
    comments_url: `${api}/comments`,
    events_url: `${api}/events`,
    html_url: `${ctx.base}/${repo}/${facts.pull ? 'pull' : 'issues'}/${facts.number}`,
    number: facts.number,
    state: facts.state,
    title: facts.title,
    body: facts.body,
    user: user(ctx, facts.user.login),
    labels: facts.labels.map((l) => label(ctx, repo, l.name)),
    assignee: null,
    assignees: [],
    milestone: null,
    locked: facts.locked,
    active_lock_reason: null,
    comments: facts.comments,
    closed_at: facts.closed_at,
    created_at: facts.created_at,
    updated_at: facts.updated_at,
    author_association: 'NONE',
    ...(facts.pull
      ? {
          pull_request: {
            url: `${ctx.base}/repos/${repo}/pulls/${facts.number}`,
            html_url: `${ctx.base}/${repo}/pull/${facts.number}`,
            diff_url: `${ctx.base}/${repo}/pull/${facts.number}.diff`,
            patch_url: `${ctx.base}/${repo}/pull/${facts.number}.patch`,
            merged_at: facts.pull_merged_at ?? null,
          },
        }
      : {}),
  };
}

/** A comment as the stand-in keeps it. */
export interface CommentFacts {
  id: number;
  issue_number: number;
  body: string;
  user: { login: string };
  created_at: string;
  updated_at: string;
}

/** `issue-comment`. */
export function comment(ctx: ShapeContext, repo: string, facts: CommentFacts): Record<string, unknown> {
  return {
    id: facts.id,
    node_id: nodeId('IC', facts.id),
    url: `${ctx.base}/repos/${repo}/issues/comments/${facts.id}`,
    html_url: `${ctx.base}/${repo}/issues/${facts.issue_number}#issuecomment-${facts.id}`,
    issue_url: `${ctx.base}/repos/${repo}/issues/${facts.issue_number}`,
    body: facts.body,
    user: user(ctx, facts.user.login),
    created_at: facts.created_at,
    updated_at: facts.updated_at,
    author_association: 'NONE',
  };
}

/** A label event as the stand-in keeps it. */
export interface EventFacts {
  id: number;
  issue_number: number;
  event: 'labeled' | 'unlabeled';
  label: { name: string };
  actor: { login: string };
  created_at: string;
}

/** `labeled-issue-event` / `unlabeled-issue-event`. */
export function event(ctx: ShapeContext, repo: string, facts: EventFacts): Record<string, unknown> {
  return {
    id: facts.id,
    node_id: nodeId('LE', facts.id),
    url: `${ctx.base}/repos/${repo}/issues/events/${facts.id}`,
    actor: user(ctx, facts.actor.login),
    event: facts.event,
    commit_id: null,
    commit_url: null,
    created_at: facts.created_at,
    performed_via_github_app: null,
    label: { name: facts.label.name, color: 'ededed' },
  };
}

/** A pull request as the stand-in keeps it. */
export interface PullFacts {
  number: number;
  title: string;
  body: string;
  head: { ref: string; label: string; sha?: string };
  base: { ref: string };
  draft: boolean;
  state: 'open' | 'closed';
  labels: { name: string }[];
  user: { login: string };
  created_at: string;
  updated_at: string;
  locked: boolean;
  /** A fork's `owner/name` when the head branch lives there (a pull request from a fork). */
  headRepo?: string;
  merged_at?: string | null;
  /** The commit merging it made on the base branch; null until merged (GitHub's test merge is not kept). */
  merge_commit_sha?: string | null;
}

/** `pull-request` (GET/POST/PATCH one) or, with `simple`, `pull-request-simple` (lists). */
export function pull(
  ctx: ShapeContext,
  repo: RepoFacts,
  facts: PullFacts,
  baseSha: string,
  simple = false,
): Record<string, unknown> {
  const id = idOf('pull', `${repo.fullName}#${facts.number}`);
  const api = `${ctx.base}/repos/${repo.fullName}/pulls/${facts.number}`;
  const issueApi = `${ctx.base}/repos/${repo.fullName}/issues/${facts.number}`;
  const html = `${ctx.base}/${repo.fullName}/pull/${facts.number}`;
  const owner = repo.fullName.split('/')[0] ?? '';
  const repoShape = repository(ctx, repo);
  const head = facts.head.sha ?? baseSha;
  const headRepo =
    facts.headRepo === undefined
      ? repoShape
      : { ...repository(ctx, { ...repo, fullName: facts.headRepo }), fork: true };
  const headOwner = facts.headRepo === undefined ? owner : (facts.headRepo.split('/')[0] ?? '');
  return {
    url: api,
    id,
    node_id: `PR_${repo.fullName}#${facts.number}`,
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    issue_url: issueApi,
    commits_url: `${api}/commits`,
    review_comments_url: `${api}/comments`,
    review_comment_url: `${ctx.base}/repos/${repo.fullName}/pulls/comments{/number}`,
    comments_url: `${issueApi}/comments`,
    statuses_url: `${ctx.base}/repos/${repo.fullName}/statuses/${head}`,
    number: facts.number,
    state: facts.state,
    locked: facts.locked,
    title: facts.title,
    user: user(ctx, facts.user.login),
    body: facts.body,
    labels: facts.labels.map((l) => label(ctx, repo.fullName, l.name)),
    milestone: null,
    active_lock_reason: null,
    created_at: facts.created_at,
    updated_at: facts.updated_at,
    closed_at: facts.state === 'closed' ? facts.updated_at : null,
    merged_at: facts.merged_at ?? null,
    merge_commit_sha: facts.merge_commit_sha ?? null,
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    head: { label: facts.head.label, ref: facts.head.ref, sha: head, user: user(ctx, headOwner), repo: headRepo },
    base: {
      label: `${owner}:${facts.base.ref}`,
      ref: facts.base.ref,
      sha: baseSha,
      user: user(ctx, owner),
      repo: repoShape,
    },
    _links: {
      self: { href: api },
      html: { href: html },
      issue: { href: issueApi },
      comments: { href: `${issueApi}/comments` },
      review_comments: { href: `${api}/comments` },
      review_comment: { href: `${ctx.base}/repos/${repo.fullName}/pulls/comments{/number}` },
      commits: { href: `${api}/commits` },
      statuses: { href: `${ctx.base}/repos/${repo.fullName}/statuses/${head}` },
    },
    author_association: 'NONE',
    auto_merge: null,
    draft: facts.draft,
    ...(simple
      ? {}
      : {
          merged: (facts.merged_at ?? null) !== null,
          mergeable: null,
          rebaseable: null,
          mergeable_state: 'unknown',
          merged_by: null,
          comments: 0,
          review_comments: 0,
          maintainer_can_modify: false,
          commits: 1,
          additions: 0,
          deletions: 0,
          changed_files: 0,
        }),
  };
}

/** An inline review comment as the stand-in keeps it. */
export interface ReviewCommentFacts {
  id: number;
  review_id: number;
  pull_number: number;
  path: string;
  line: number;
  body: string;
  user: { login: string };
  created_at: string;
}

/** `review-comment`. */
export function reviewComment(
  ctx: ShapeContext,
  repo: string,
  facts: ReviewCommentFacts,
  sha: string,
): Record<string, unknown> {
  const api = `${ctx.base}/repos/${repo}/pulls/comments/${facts.id}`;
  const html = `${ctx.base}/${repo}/pull/${facts.pull_number}#discussion_r${facts.id}`;
  const pullApi = `${ctx.base}/repos/${repo}/pulls/${facts.pull_number}`;
  return {
    id: facts.id,
    node_id: nodeId('PRRC', facts.id),
    url: api,
    pull_request_review_id: facts.review_id,
    diff_hunk: '@@ -1 +1 @@',
    path: facts.path,
    position: facts.line,
    original_position: facts.line,
    line: facts.line,
    commit_id: sha,
    original_commit_id: sha,
    user: user(ctx, facts.user.login),
    body: facts.body,
    created_at: facts.created_at,
    updated_at: facts.created_at,
    html_url: html,
    pull_request_url: pullApi,
    author_association: 'COLLABORATOR',
    _links: { self: { href: api }, html: { href: html }, pull_request: { href: pullApi } },
  };
}

/** `repository-collaborator-permission`: `permission` is the legacy level, `role_name` the role. */
export function permission(ctx: ShapeContext, login: string, role: string, legacy: string): Record<string, unknown> {
  return { permission: legacy, role_name: role, user: { ...user(ctx, login), role_name: role } };
}

/** GitHub's error body. */
export function error(message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { message, documentation_url: 'https://docs.github.com/rest', ...extra };
}
