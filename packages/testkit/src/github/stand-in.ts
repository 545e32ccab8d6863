import { createPublicKey, generateKeyPairSync, randomBytes, verify as verifySignature } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { createTempDir, type TempDir } from '../temp-dir.js';
import { createTempRepo, gitTestEnv } from '../git-repo.js';
import { serveGit } from './git-http.js';
import { createCheckRoutes, jobLogPath, type JobLogDownloads } from './check-routes.js';
import { createRoutes } from './routes.js';
import { landPull, openedPull, pushBranch, type MergeMethod, type OpenedPullInput } from './pull-merges.js';
import { error as errorBody } from './shapes.js';
import type {
  Exchange,
  FaultRule,
  Permission,
  RepoOptions,
  RepoState,
  StandInCheckRun,
  StandInComment,
  StandInIssue,
  StandInPull,
  StandInStatus,
} from './state.js';

export type {
  Exchange,
  FaultRule,
  Permission,
  RepoOptions,
  StandInCheckRun,
  StandInComment,
  StandInEvent,
  StandInIssue,
  StandInPull,
  StandInStatus,
} from './state.js';

/** A check run a CI service reports on a commit (see {@link GithubStandIn.addCheckRun}). */
export interface CheckRunInput {
  /** The commit: a full sha, or a branch name read now. */
  ref: string;
  name: string;
  /** Default `github-actions`: an Actions job, whose log the job-logs endpoint serves. */
  app?: string;
  /** Default `completed`. */
  status?: StandInCheckRun['status'];
  /** Default `success` when completed. */
  conclusion?: StandInCheckRun['conclusion'];
  output?: Partial<StandInCheckRun['output']>;
  /** The Actions job's log. */
  log?: string;
}

/**
 * A STAND-IN for GitHub, for tests only: an HTTP server on loopback that speaks the subset
 * of GitHub's REST API the forge adapter and the producer use (repos, issues, comments,
 * labels, events, pulls, review comments, collaborator permission, the two draft
 * mutations of GraphQL), plus git smart HTTP over real bare repositories (`git
 * http-backend`) with token auth, so the real Octokit and git code run against it.
 *
 * Where GitHub's behaviour matters it is copied: objects carry every field GitHub's
 * OpenAPI description requires (a forge test validates them against it), lists are paged
 * (`per_page` 30 by default, at most 100, `Link` headers), newest first where GitHub
 * sorts so; drafts are refused on a repository created with `draftPullRequests: false`,
 * comments on a locked issue are refused. It counts pull request creations per head, so
 * tests can assert exactly one.
 */
export interface GithubStandIn {
  /** API base and git host: `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The token every request must carry (`Authorization: token|Bearer …`, or git Basic auth as the password). */
  readonly token: string;
  /**
   * Registers a GitHub App with one installation: its private key signs JWTs that
   * `POST /app/installations/:id/access_tokens` exchanges for installation tokens, valid
   * for `ttlSeconds` (GitHub: one hour) and accepted like {@link token}.
   */
  createApp(ttlSeconds?: number): { appId: number; installationId: number; privateKey: string };
  /** Installation tokens handed out so far. */
  readonly installationTokens: string[];
  /**
   * Revokes every installation token handed out so far: GitHub answers 401 to them, on the
   * API and on git, as after `DELETE /installation/token`. New ones are minted as before,
   * unless `suspend`: then the exchange answers 403, as for a suspended installation.
   */
  revokeInstallationTokens(options?: { suspend?: boolean }): void;
  createRepo(
    fullName: string,
    files?: Record<string, string>,
    options?: RepoOptions,
  ): Promise<{ cloneUrl: string; bareDir: string }>;
  /** The bare repository behind `fullName`, for asserting what was pushed. */
  repoDir(fullName: string): string;
  createIssue(
    fullName: string,
    issue: { title: string; body?: string; user?: string; labels?: string[] },
  ): StandInIssue;
  /** A reviewer's inline comment, part of review `reviewId` on pull request `pull`. */
  addReviewComment(
    fullName: string,
    pull: number,
    reviewId: number,
    comment: { path: string; line: number; body: string; user: string },
  ): void;
  /** A person comments on an issue on GitHub's website. */
  commentAs(fullName: string, issueNumber: number, login: string, body: string): StandInComment;
  /** A person adds a label on GitHub's website: the label and a `labeled` event by `actor`. */
  labelIssue(fullName: string, issueNumber: number, label: string, actor: string): void;
  /** A person removes a label on GitHub's website: an `unlabeled` event by `actor`. */
  unlabelIssue(fullName: string, issueNumber: number, label: string, actor: string): void;
  /**
   * A CI service reports a check run on a commit (a suite per commit and app); returns its
   * id (for Actions, the job id) and its suite's id, as the webhook payloads carry them.
   */
  addCheckRun(fullName: string, run: CheckRunInput): Promise<StandInCheckRun>;
  /** The CI service finishes check run `id` (added `queued` or `in_progress`): completed now, with `conclusion`. */
  completeCheckRun(
    fullName: string,
    id: number,
    result: Pick<CheckRunInput, 'conclusion' | 'output' | 'log'>,
  ): StandInCheckRun;
  /** A CI service sets a commit status (the Statuses API). */
  setStatus(
    fullName: string,
    ref: string,
    status: { context: string; state: StandInStatus['state']; description?: string; targetUrl?: string },
  ): Promise<StandInStatus>;
  /** Someone opens a pull request from a fork: its head branch lives in `headRepo`, at `sha`. */
  openForkPull(
    fullName: string,
    pull: { headRepo: string; head: string; sha: string; base?: string; title: string; body?: string; user?: string },
  ): StandInPull;
  /** Someone pushes `branch`: one commit of `files` on top of `from` (default main). Resolves its sha. */
  pushBranch(
    fullName: string,
    push: { branch: string; from?: string; files: Record<string, string>; message: string },
  ): Promise<string>;
  /** Someone opens a pull request from branch `head` of the repository itself (pushed there first). */
  openPull(fullName: string, pull: OpenedPullInput): StandInPull;
  /**
   * A person merges pull request `number` with GitHub's button: its head lands on its base in
   * the bare repository (a merge commit, or one squashed commit), and the pull request is
   * closed, merged and names that commit in `merge_commit_sha`. Resolves the commit's sha.
   * ({@link mergePull} only flips the state, for tests that do not read the history.)
   */
  landPull(fullName: string, number: number, method: MergeMethod): Promise<string>;
  /** A maintainer locks the conversation: GitHub then refuses new comments (403). */
  lockIssue(fullName: string, issueNumber: number): void;
  setPermission(fullName: string, login: string, permission: Permission): void;
  pulls(fullName: string): StandInPull[];
  /** A person merges pull request `number` on GitHub's website (`state: closed`, `merged: true`). */
  mergePull(fullName: string, number: number): void;
  /** A person closes pull request `number` without merging it. */
  closePull(fullName: string, number: number): void;
  comments(fullName: string, issueNumber: number): StandInComment[];
  labels(fullName: string, issueNumber: number): string[];
  /** Pull request creations that succeeded for `head` (duplicates would show here). */
  prCreations(fullName: string, head: string): number;
  /** The next `times` requests matching `method` and `path` get this response instead. */
  failNext(rule: FaultRule): void;
  /**
   * From now on REST requests whose path matches `path` (default every REST request; git
   * over HTTP is left alone) are received and never answered, as a hung API does.
   */
  silence(path?: RegExp): void;
  /**
   * Every request, for asserting what the adapter sent (authorization header redacted):
   * `authorized` when it carried this stand-in's token, `credentials` when it carried any.
   */
  readonly requests: { method: string; path: string; authorized: boolean; credentials: boolean }[];
  /** Every REST answer with its operation's path template, for checking against GitHub's description. */
  readonly exchanges: Exchange[];
  close(): Promise<void>;
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
};

/** Starts the stand-in on a random loopback port. */
export async function startGithubStandIn(options: { token?: string; botLogin?: string } = {}): Promise<GithubStandIn> {
  const token = options.token ?? `ghs_standin${randomBytes(12).toString('hex')}`;
  const bot = options.botLogin ?? 'codefleet[bot]';
  const root: TempDir = await createTempDir('github-standin');
  const repos = new Map<string, RepoState>();
  const faults: FaultRule[] = [];
  const silenced: RegExp[] = [];
  const requests: GithubStandIn['requests'] = [];
  const apps = new Map<number, { publicKey: string; installationId: number; ttlSeconds: number }>();
  const installationTokens = new Map<string, number>();
  let suspended = false;
  const validJwt = (jwt: string): number | undefined => {
    const [head = '', body = '', sig = ''] = jwt.split('.');
    let claims: { iss?: number | string; exp?: number };
    try {
      claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return undefined;
    }
    const app = apps.get(Number(claims.iss));
    if (!app || (claims.exp ?? 0) * 1_000 < Date.now()) return undefined;
    const ok = verifySignature(
      'RSA-SHA256',
      Buffer.from(`${head}.${body}`),
      createPublicKey(app.publicKey),
      Buffer.from(sig, 'base64url'),
    );
    return ok ? Number(claims.iss) : undefined;
  };
  let commentIds = 1000;
  let checkIds = 900_000;
  let base = '';
  const now = () => new Date().toISOString();

  const repo = (fullName: string): RepoState => {
    const state = repos.get(fullName.toLowerCase());
    if (!state) throw Object.assign(new Error(`no repo ${fullName}`), { status: 404 });
    return state;
  };
  const authorized = (req: IncomingMessage): { ok: boolean; user: string } => {
    const header = req.headers.authorization ?? '';
    const [scheme, value = ''] = header.split(' ');
    const live = (t: string) => t === token || (installationTokens.get(t) ?? 0) > Date.now();
    if (/^(token|bearer)$/i.test(scheme ?? '')) return { ok: live(value), user: bot };
    if (/^basic$/i.test(scheme ?? '')) {
      const [user = '', password = ''] = Buffer.from(value, 'base64').toString('utf8').split(':');
      return { ok: live(password), user };
    }
    return { ok: false, user: '' };
  };

  const sha = async (state: RepoState, ref: string): Promise<string | undefined> => {
    if (ref === '') return undefined;
    const found = await execa('git', ['rev-parse', '--verify', '--quiet', `refs/heads/${ref}`], {
      cwd: state.bareDir,
      reject: false,
      env: gitTestEnv(),
    });
    return found.exitCode === 0 ? String(found.stdout).trim() : undefined;
  };
  const branches = async (state: RepoState): Promise<Map<string, string>> => {
    const listed = await execa('git', ['for-each-ref', '--format=%(objectname) %(refname:lstrip=2)', 'refs/heads/'], {
      cwd: state.bareDir,
      env: gitTestEnv(),
    });
    return new Map(
      String(listed.stdout)
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => [line.slice(line.indexOf(' ') + 1), line.slice(0, line.indexOf(' '))]),
    );
  };
  let eventIds = 5000;
  const addEvent = (
    state: RepoState,
    issueNumber: number,
    event: 'labeled' | 'unlabeled',
    label: string,
    actor: string,
  ) => {
    state.events.push({
      id: (eventIds += 1),
      issue_number: issueNumber,
      event,
      label: { name: label },
      actor: { login: actor },
      created_at: now(),
    });
    const found = state.issues.get(issueNumber) ?? state.pulls.get(issueNumber);
    if (found) found.updated_at = now();
  };
  const shapes = { base: '' };
  const routeContext = {
    shapes,
    bot,
    repo,
    repos: () => repos.values(),
    now,
    nextCommentId: () => (commentIds += 1),
    addEvent,
    sha,
    branches,
  };
  const downloads: JobLogDownloads = new Map();
  const routes = [...createRoutes(routeContext), ...createCheckRoutes(routeContext, downloads)];
  const exchanges: Exchange[] = [];

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', base);
    const auth = authorized(req);
    requests.push({
      method: req.method ?? 'GET',
      path: url.pathname,
      authorized: auth.ok,
      credentials: req.headers.authorization !== undefined,
    });
    let route = '';
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (route !== '') exchanges.push({ method: req.method ?? 'GET', route, path: url.pathname, status, body });
      send(res, status, body, headers);
    };
    void (async () => {
      const git = /^\/([^/]+\/[^/]+\.git)(\/.*)$/.exec(url.pathname);
      if (git) {
        if (!auth.ok) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub stand-in"' }).end();
        return serveGit(req, res, {
          projectRoot: root.path,
          pathInfo: `/${git[1]}${git[2]}`,
          query: url.search.slice(1),
          user: auth.user,
        });
      }
      if (url.pathname.startsWith(jobLogPath) && req.method === 'GET') {
        // The signed download URL the job-logs endpoint redirects to: no token, one key per log.
        const log = downloads.get(url.pathname.slice(jobLogPath.length));
        if (log === undefined) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('BlobNotFound');
        return void res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(log);
      }
      const exchange = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
      if (exchange && req.method === 'POST') {
        route = '/app/installations/{installation_id}/access_tokens';
        const appId = validJwt((req.headers.authorization ?? '').replace(/^bearer\s+/i, ''));
        const app = appId === undefined ? undefined : apps.get(appId);
        if (!app || app.installationId !== Number(exchange[1]))
          return reply(401, errorBody('A JSON web token could not be decoded'));
        if (suspended) return reply(403, errorBody('This installation has been suspended'));
        const issued = `ghs_${randomBytes(18).toString('hex')}`;
        const expires = Date.now() + app.ttlSeconds * 1_000;
        installationTokens.set(issued, expires);
        return reply(201, {
          token: issued,
          expires_at: new Date(expires).toISOString(),
          permissions: { issues: 'write', pull_requests: 'write', contents: 'write' },
          repository_selection: 'all',
        });
      }
      if (!auth.ok) return reply(401, errorBody('Bad credentials'));
      // Accepted and never answered: the connection stays open until close.
      if (silenced.some((path) => path.test(url.pathname))) return;
      const fault = faults.find((f) => f.method === req.method && f.path.test(url.pathname));
      if (fault) {
        fault.times = (fault.times ?? 1) - 1;
        if (fault.times <= 0) faults.splice(faults.indexOf(fault), 1);
        return send(res, fault.status, fault.body ?? errorBody(`stand-in fault ${fault.status}`), fault.headers);
      }
      for (const [method, pattern, template, handler] of routes) {
        const m = pattern.exec(url.pathname);
        if (m && method === req.method) {
          route = template;
          return await handler(m, req, url, reply);
        }
      }
      send(res, 404, errorBody('Not Found (not in the stand-in)'));
    })().catch((error: unknown) => {
      const status = (error as { status?: number }).status ?? 500;
      if (!res.headersSent) reply(status, errorBody(error instanceof Error ? error.message : String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  shapes.base = base;

  /** An issue or a pull request: they share numbers, comments and labels. */
  const item = (state: RepoState, n: number): StandInIssue | StandInPull | undefined =>
    state.issues.get(n) ?? state.pulls.get(n);
  let appIds = 100;
  return {
    url: base,
    token,
    requests,
    exchanges,
    get installationTokens() {
      return [...installationTokens.keys()];
    },
    revokeInstallationTokens(options = {}) {
      for (const issued of installationTokens.keys()) installationTokens.set(issued, 0);
      suspended = options.suspend ?? false;
    },
    createApp(ttlSeconds = 3_600) {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const appId = (appIds += 1);
      const installationId = appId * 10;
      apps.set(appId, {
        publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        installationId,
        ttlSeconds,
      });
      return { appId, installationId, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    },
    async createRepo(fullName, files = { 'README.md': `# ${fullName}\n` }, options = {}) {
      const bareDir = join(root.path, `${fullName}.git`);
      const seed = await createTempRepo({ files });
      await execa('git', ['clone', '--quiet', '--bare', seed.path, bareDir], { env: gitTestEnv() });
      // Pushes over HTTP need receive-pack enabled for the bare repository.
      await execa('git', ['config', 'http.receivepack', 'true'], { cwd: bareDir, env: gitTestEnv() });
      await seed.dispose();
      repos.set(fullName.toLowerCase(), {
        fullName,
        bareDir,
        createdAt: now(),
        options: { private: options.private ?? false, draftPullRequests: options.draftPullRequests ?? true },
        next: 0,
        issues: new Map(),
        pulls: new Map(),
        comments: new Map(),
        permissions: new Map(),
        creations: new Map(),
        events: [],
        reviewComments: [],
        checkRuns: [],
        statuses: [],
      });
      return { cloneUrl: `${base}/${fullName}.git`, bareDir };
    },
    createIssue(fullName, input) {
      const state = repo(fullName);
      state.next += 1;
      const issue: StandInIssue = {
        number: state.next,
        title: input.title,
        body: input.body ?? '',
        user: { login: input.user ?? 'octocat' },
        labels: (input.labels ?? []).map((name) => ({ name })),
        state: 'open',
        locked: false,
        comments: 0,
        created_at: now(),
        updated_at: now(),
        closed_at: null,
      };
      state.issues.set(issue.number, issue);
      return issue;
    },
    addReviewComment(fullName, pull, reviewId, c) {
      repo(fullName).reviewComments.push({
        id: (commentIds += 1),
        review_id: reviewId,
        pull_number: pull,
        path: c.path,
        line: c.line,
        body: c.body,
        user: { login: c.user },
        created_at: now(),
      });
    },
    commentAs(fullName, issueNumber, login, body) {
      const comment: StandInComment = {
        id: (commentIds += 1),
        issue_number: issueNumber,
        body,
        user: { login },
        created_at: now(),
        updated_at: now(),
      };
      repo(fullName).comments.set(comment.id, comment);
      return comment;
    },
    labelIssue(fullName, issueNumber, label, actor) {
      const state = repo(fullName);
      const issue = state.issues.get(issueNumber);
      if (!issue) throw new Error(`no issue ${issueNumber} in ${fullName}`);
      if (!issue.labels.some((l) => l.name.toLowerCase() === label.toLowerCase())) issue.labels.push({ name: label });
      addEvent(state, issueNumber, 'labeled', label, actor);
    },
    unlabelIssue(fullName, issueNumber, label, actor) {
      const state = repo(fullName);
      const issue = state.issues.get(issueNumber);
      if (!issue) throw new Error(`no issue ${issueNumber} in ${fullName}`);
      issue.labels = issue.labels.filter((l) => l.name.toLowerCase() !== label.toLowerCase());
      addEvent(state, issueNumber, 'unlabeled', label, actor);
    },
    async addCheckRun(fullName, input) {
      const state = repo(fullName);
      const headSha = /^[0-9a-f]{40}$/.test(input.ref) ? input.ref : await sha(state, input.ref);
      if (headSha === undefined) throw new Error(`no commit ${input.ref} in ${fullName}`);
      const app = input.app ?? 'github-actions';
      const status = input.status ?? 'completed';
      const suite = state.checkRuns.find((r) => r.headSha === headSha && r.app === app)?.suiteId ?? (checkIds += 1);
      const branch = /^[0-9a-f]{40}$/.test(input.ref) ? '' : input.ref;
      const run: StandInCheckRun = {
        id: (checkIds += 1),
        suiteId: suite,
        headSha,
        headBranch: branch,
        name: input.name,
        app,
        status,
        conclusion: status === 'completed' ? (input.conclusion ?? 'success') : null,
        output: {
          title: input.output?.title ?? null,
          summary: input.output?.summary ?? null,
          text: input.output?.text ?? null,
        },
        ...(input.log === undefined ? {} : { log: input.log }),
        startedAt: now(),
        completedAt: status === 'completed' ? now() : null,
      };
      state.checkRuns.push(run);
      return run;
    },
    completeCheckRun(fullName, id, result) {
      const run = repo(fullName).checkRuns.find((r) => r.id === id);
      if (!run) throw new Error(`no check run ${id} in ${fullName}`);
      Object.assign(run, {
        status: 'completed',
        conclusion: result.conclusion ?? 'success',
        completedAt: now(),
        output: {
          title: result.output?.title ?? null,
          summary: result.output?.summary ?? null,
          text: result.output?.text ?? null,
        },
        ...(result.log === undefined ? {} : { log: result.log }),
      });
      return run;
    },
    async setStatus(fullName, ref, input) {
      const state = repo(fullName);
      const at = /^[0-9a-f]{40}$/.test(ref) ? ref : await sha(state, ref);
      if (at === undefined) throw new Error(`no commit ${ref} in ${fullName}`);
      const status: StandInStatus = {
        id: (checkIds += 1),
        sha: at,
        context: input.context,
        state: input.state,
        description: input.description ?? null,
        targetUrl: input.targetUrl ?? null,
        createdAt: now(),
      };
      state.statuses.push(status);
      return status;
    },
    openForkPull: (fullName, input) => openedPull(repo(fullName), base, now(), input),
    pushBranch: (fullName, push) => pushBranch(repo(fullName), { ...push, from: push.from ?? 'main' }),
    openPull: (fullName, input) => openedPull(repo(fullName), base, now(), input),
    async landPull(fullName, number, method) {
      const state = repo(fullName);
      const pull = state.pulls.get(number);
      if (!pull || pull.state !== 'open') throw new Error(`no open pull request ${number} in ${fullName}`);
      const merged = await landPull(state, pull, method);
      Object.assign(pull, { state: 'closed', merged_at: now(), updated_at: now(), merge_commit_sha: merged });
      return merged;
    },
    lockIssue(fullName, issueNumber) {
      const found = item(repo(fullName), issueNumber);
      if (!found) throw new Error(`no issue ${issueNumber} in ${fullName}`);
      found.locked = true;
    },
    repoDir: (fullName) => repo(fullName).bareDir,
    setPermission(fullName, login, permission) {
      repo(fullName).permissions.set(login.toLowerCase(), permission);
    },
    pulls: (fullName) => [...repo(fullName).pulls.values()],
    mergePull(fullName, number) {
      const pull = repo(fullName).pulls.get(number);
      if (!pull) throw new Error(`no pull request ${number} in ${fullName}`);
      Object.assign(pull, { state: 'closed', merged_at: now(), updated_at: now() });
    },
    closePull(fullName, number) {
      const pull = repo(fullName).pulls.get(number);
      if (!pull) throw new Error(`no pull request ${number} in ${fullName}`);
      Object.assign(pull, { state: 'closed', updated_at: now() });
    },
    comments: (fullName, n) => [...repo(fullName).comments.values()].filter((c) => c.issue_number === n),
    labels: (fullName, n) => (item(repo(fullName), n)?.labels ?? []).map((l) => l.name),
    prCreations: (fullName, head) => repo(fullName).creations.get(head) ?? 0,
    failNext(rule) {
      faults.push({ ...rule });
    },
    silence(path = /.*/) {
      silenced.push(path);
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await root.dispose();
    },
  };
}
