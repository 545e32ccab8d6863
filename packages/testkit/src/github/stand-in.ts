import { createPublicKey, generateKeyPairSync, randomBytes, verify as verifySignature } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { createTempDir, type TempDir } from '../temp-dir.js';
import { createTempRepo, gitTestEnv } from '../git-repo.js';
import { serveGit } from './git-http.js';

/**
 * A STAND-IN for GitHub, for tests only: an HTTP server on loopback that speaks the subset
 * of GitHub's REST API the forge adapter uses (repos, issues, comments, labels, pulls,
 * collaborator permission), plus git smart HTTP over real bare repositories (`git
 * http-backend`) with token auth, so the real Octokit and git code run against it. It
 * counts pull request creations per head, so tests can assert exactly one.
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
  createRepo(fullName: string, files?: Record<string, string>): Promise<{ cloneUrl: string; bareDir: string }>;
  /** The bare repository behind `fullName`, for asserting what was pushed. */
  repoDir(fullName: string): string;
  createIssue(fullName: string, issue: { title: string; body?: string; user?: string; labels?: string[] }): StandInIssue;
  /** A reviewer's inline comment, part of review `reviewId` on pull request `pull`. */
  addReviewComment(fullName: string, pull: number, reviewId: number, comment: { path: string; line: number; body: string; user: string }): void;
  /** A person comments on an issue on GitHub's website. */
  commentAs(fullName: string, issueNumber: number, login: string, body: string): StandInComment;
  /** A person adds a label on GitHub's website: the label and a `labeled` event by `actor`. */
  labelIssue(fullName: string, issueNumber: number, label: string, actor: string): void;
  setPermission(fullName: string, login: string, permission: Permission): void;
  pulls(fullName: string): StandInPull[];
  comments(fullName: string, issueNumber: number): StandInComment[];
  labels(fullName: string, issueNumber: number): string[];
  /** Pull request creations that succeeded for `head` (duplicates would show here). */
  prCreations(fullName: string, head: string): number;
  /** The next `times` requests matching `method` and `path` get this response instead. */
  failNext(rule: FaultRule): void;
  /**
   * Every request, for asserting what the adapter sent (authorization header redacted):
   * `authorized` when it carried this stand-in's token, `credentials` when it carried any.
   */
  readonly requests: { method: string; path: string; authorized: boolean; credentials: boolean }[];
  close(): Promise<void>;
}

export type Permission = 'admin' | 'maintain' | 'write' | 'triage' | 'read' | 'none';
export interface StandInIssue { number: number; title: string; body: string; user: { login: string }; labels: { name: string }[]; state: 'open' | 'closed'; updated_at: string }
export interface StandInComment { id: number; issue_number: number; body: string; user: { login: string }; created_at: string; updated_at: string }
export interface StandInPull {
  number: number; node_id: string; title: string; body: string; head: { ref: string; label: string; sha?: string }; base: { ref: string };
  draft: boolean; state: 'open' | 'closed'; html_url: string; labels: { name: string }[]; created_at: string; updated_at: string; merged_at: null;
}
export interface StandInEvent { id: number; issue_number: number; event: 'labeled' | 'unlabeled'; label: { name: string }; actor: { login: string }; created_at: string }
export interface FaultRule { method: string; path: RegExp; status: number; headers?: Record<string, string>; body?: unknown; times?: number }

interface RepoState {
  bareDir: string;
  next: number;
  issues: Map<number, StandInIssue>;
  pulls: Map<number, StandInPull>;
  comments: Map<number, StandInComment>;
  permissions: Map<string, Permission>;
  creations: Map<string, number>;
  events: StandInEvent[];
  reviewComments: { review_id: number; pull_number: number; path: string; line: number; body: string; user: { login: string } }[];
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
};

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** Starts the stand-in on a random loopback port. */
export async function startGithubStandIn(options: { token?: string; botLogin?: string } = {}): Promise<GithubStandIn> {
  const token = options.token ?? `ghs_standin${randomBytes(12).toString('hex')}`;
  const bot = options.botLogin ?? 'codefleet[bot]';
  const root: TempDir = await createTempDir('github-standin');
  const repos = new Map<string, RepoState>();
  const faults: FaultRule[] = [];
  const requests: GithubStandIn['requests'] = [];
  const apps = new Map<number, { publicKey: string; installationId: number; ttlSeconds: number }>();
  const installationTokens = new Map<string, number>();
  const validJwt = (jwt: string): number | undefined => {
    const [head = '', body = '', sig = ''] = jwt.split('.');
    let claims: { iss?: number | string; exp?: number };
    try { claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as typeof claims; } catch { return undefined; }
    const app = apps.get(Number(claims.iss));
    if (!app || (claims.exp ?? 0) * 1_000 < Date.now()) return undefined;
    const ok = verifySignature('RSA-SHA256', Buffer.from(`${head}.${body}`), createPublicKey(app.publicKey), Buffer.from(sig, 'base64url'));
    return ok ? Number(claims.iss) : undefined;
  };
  let commentIds = 1000;
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

  // The head's current sha, read from the bare repository as GitHub reports it.
  const withSha = async (state: RepoState, pull: StandInPull): Promise<StandInPull> => {
    const sha = await execa('git', ['rev-parse', '--verify', '--quiet', `refs/heads/${pull.head.ref}`], { cwd: state.bareDir, reject: false, env: gitTestEnv() });
    return { ...pull, head: { ...pull.head, ...(sha.exitCode === 0 ? { sha: String(sha.stdout).trim() } : {}) } };
  };
  let eventIds = 5000;
  const addEvent = (state: RepoState, issueNumber: number, label: string, actor: string) => {
    state.events.push({ id: (eventIds += 1), issue_number: issueNumber, event: 'labeled', label: { name: label }, actor: { login: actor }, created_at: now() });
    const found = state.issues.get(issueNumber);
    if (found) found.updated_at = now();
  };
  /** An issue or a pull request: they share numbers, comments and labels. */
  const item = (state: RepoState, n: number) => state.issues.get(n) ?? state.pulls.get(n);

  type Handler = (m: RegExpExecArray, req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;
  const routes: [string, RegExp, Handler][] = [
    ['GET', /^\/repos\/([^/]+\/[^/]+)$/, (m, _req, res) => {
      const name = m[1] ?? '';
      repo(name);
      json(res, 200, { full_name: name, default_branch: 'main', clone_url: `${base}/${name}.git`, private: false });
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)$/, (m, _req, res) => {
      const issue = repo(m[1] ?? '').issues.get(Number(m[2]));
      if (!issue) json(res, 404, { message: 'Not Found' });
      else json(res, 200, issue);
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/issues$/, (m, _req, res, url) => {
      const labels = (url.searchParams.get('labels') ?? '').split(',').filter((l) => l !== '').map((l) => l.toLowerCase());
      const since = url.searchParams.get('since');
      const state = url.searchParams.get('state') ?? 'open';
      const found = [...repo(m[1] ?? '').issues.values()]
        .filter((i) => (state === 'all' || i.state === state) && labels.every((l) => i.labels.some((x) => x.name.toLowerCase() === l)) && (since === null || i.updated_at >= since))
        .sort((a, b) => a.updated_at.localeCompare(b.updated_at));
      json(res, 200, found);
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/reviews\/(\d+)\/comments$/, (m, _req, res) => {
      json(res, 200, repo(m[1] ?? '').reviewComments.filter((c) => c.pull_number === Number(m[2]) && c.review_id === Number(m[3])));
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/issues\/comments$/, (m, _req, res, url) => {
      const since = url.searchParams.get('since');
      const r = repo(m[1] ?? '');
      const found = [...r.comments.values()].filter((c) => since === null || c.updated_at >= since).sort((a, b) => a.id - b.id)
        .map((c) => ({ ...c, issue_url: `${base}/repos/${m[1]}/issues/${c.issue_number}` }));
      json(res, 200, found);
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/events$/, (m, _req, res) => {
      json(res, 200, repo(m[1] ?? '').events.filter((e) => e.issue_number === Number(m[2])));
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/, (m, _req, res) => {
      json(res, 200, [...repo(m[1] ?? '').comments.values()].filter((c) => c.issue_number === Number(m[2])));
    }],
    ['POST', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/, async (m, req, res) => {
      const body = await readBody(req);
      if (!item(repo(m[1] ?? ''), Number(m[2]))) return json(res, 404, { message: 'Not Found' });
      const comment: StandInComment = { id: (commentIds += 1), issue_number: Number(m[2]), body: String(body.body ?? ''), user: { login: bot }, created_at: now(), updated_at: now() };
      repo(m[1] ?? '').comments.set(comment.id, comment);
      json(res, 201, comment);
    }],
    ['PATCH', /^\/repos\/([^/]+\/[^/]+)\/issues\/comments\/(\d+)$/, async (m, req, res) => {
      const comment = repo(m[1] ?? '').comments.get(Number(m[2]));
      if (!comment) return json(res, 404, { message: 'Not Found' });
      comment.body = String((await readBody(req)).body ?? '');
      comment.updated_at = now();
      json(res, 200, comment);
    }],
    ['POST', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/labels$/, async (m, req, res) => {
      const issue = item(repo(m[1] ?? ''), Number(m[2]));
      if (!issue) return json(res, 404, { message: 'Not Found' });
      for (const name of (await readBody(req)).labels as string[]) {
        if (!issue.labels.some((l) => l.name.toLowerCase() === name.toLowerCase())) {
          issue.labels.push({ name });
          addEvent(repo(m[1] ?? ''), issue.number, name, bot);
        }
      }
      json(res, 200, issue.labels);
    }],
    ['DELETE', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/labels\/([^/]+)$/, (m, _req, res) => {
      const issue = item(repo(m[1] ?? ''), Number(m[2]));
      const name = decodeURIComponent(m[3] ?? '').toLowerCase();
      if (!issue?.labels.some((l) => l.name.toLowerCase() === name)) return json(res, 404, { message: 'Label does not exist' });
      issue.labels = issue.labels.filter((l) => l.name.toLowerCase() !== name);
      json(res, 200, issue.labels);
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/pulls$/, async (m, _req, res, url) => {
      const state = url.searchParams.get('state') ?? 'open';
      const head = url.searchParams.get('head');
      const r = repo(m[1] ?? '');
      const found = [...r.pulls.values()].filter((p) => (state === 'all' || p.state === state) && (head === null || p.head.label === head));
      json(res, 200, await Promise.all(found.map((p) => withSha(r, p))));
    }],
    ['POST', /^\/repos\/([^/]+\/[^/]+)\/pulls$/, async (m, req, res) => {
      const name = m[1] ?? '';
      const state = repo(name);
      const body = await readBody(req);
      const head = String(body.head ?? '');
      const ref = head.includes(':') ? head.slice(head.indexOf(':') + 1) : head;
      const label = `${name.split('/')[0]}:${ref}`;
      const exists = await execa('git', ['rev-parse', '--verify', '--quiet', `refs/heads/${ref}`], { cwd: state.bareDir, reject: false, env: gitTestEnv() });
      if (exists.exitCode !== 0) return json(res, 422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', field: 'head', code: 'invalid' }] });
      // Checked and created with no await in between: GitHub enforces one open PR per head atomically.
      if ([...state.pulls.values()].some((p) => p.state === 'open' && p.head.label === label)) {
        return json(res, 422, { message: 'Validation Failed', errors: [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${label}.` }] });
      }
      state.next += 1;
      const pull: StandInPull = {
        number: state.next, node_id: `PR_${name}#${state.next}`, title: String(body.title ?? ''), body: String(body.body ?? ''), head: { ref, label }, base: { ref: String(body.base ?? 'main') },
        draft: body.draft === true, state: 'open', html_url: `${base}/${name}/pull/${state.next}`, labels: [], created_at: now(), updated_at: now(), merged_at: null,
      };
      state.pulls.set(pull.number, pull);
      state.creations.set(ref, (state.creations.get(ref) ?? 0) + 1);
      json(res, 201, await withSha(state, pull));
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/, async (m, _req, res) => {
      const r = repo(m[1] ?? '');
      const pull = r.pulls.get(Number(m[2]));
      if (!pull) json(res, 404, { message: 'Not Found' });
      else json(res, 200, await withSha(r, pull));
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/labels$/, (m, _req, res) => {
      const found = item(repo(m[1] ?? ''), Number(m[2]));
      if (!found) json(res, 404, { message: 'Not Found' });
      else json(res, 200, found.labels);
    }],
    // GitHub changes the draft flag only through GraphQL; the two mutations the adapter uses.
    ['POST', /^\/graphql$/, async (_m, req, res) => {
      const { query = '', variables = {} } = (await readBody(req)) as { query?: string; variables?: { id?: string } };
      const draft = /convertPullRequestToDraft/.test(query) ? true : /markPullRequestReadyForReview/.test(query) ? false : undefined;
      const pull = [...repos.values()].flatMap((r) => [...r.pulls.values()]).find((p) => p.node_id === variables.id);
      if (draft === undefined || !pull) return json(res, 200, { errors: [{ message: 'not supported by the stand-in, or no such pull request' }] });
      pull.draft = draft;
      pull.updated_at = now();
      json(res, 200, { data: { result: { pullRequest: { isDraft: draft } } } });
    }],
    ['PATCH', /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/, async (m, req, res) => {
      const pull = repo(m[1] ?? '').pulls.get(Number(m[2]));
      if (!pull) return json(res, 404, { message: 'Not Found' });
      const body = await readBody(req);
      if (typeof body.title === 'string') pull.title = body.title;
      if (typeof body.body === 'string') pull.body = body.body;
      if (body.state === 'open' || body.state === 'closed') pull.state = body.state;
      pull.updated_at = now();
      json(res, 200, await withSha(repo(m[1] ?? ''), pull));
    }],
    ['GET', /^\/repos\/([^/]+\/[^/]+)\/collaborators\/([^/]+)\/permission$/, (m, _req, res) => {
      const login = decodeURIComponent(m[2] ?? '');
      const permission = repo(m[1] ?? '').permissions.get(login.toLowerCase()) ?? 'none';
      // Like GitHub: `permission` is the legacy level (maintain reads as write, triage as read); `role_name` the role.
      const legacy: Record<Permission, string> = { admin: 'admin', maintain: 'write', write: 'write', triage: 'read', read: 'read', none: 'none' };
      json(res, 200, { permission: legacy[permission], role_name: permission, user: { login } });
    }],
  ];

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', base);
    const auth = authorized(req);
    requests.push({ method: req.method ?? 'GET', path: url.pathname, authorized: auth.ok, credentials: req.headers.authorization !== undefined });
    void (async () => {
      const git = /^\/([^/]+\/[^/]+\.git)(\/.*)$/.exec(url.pathname);
      if (git) {
        if (!auth.ok) return void res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub stand-in"' }).end();
        return serveGit(req, res, { projectRoot: root.path, pathInfo: `/${git[1]}${git[2]}`, query: url.search.slice(1), user: auth.user });
      }
      const exchange = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname);
      if (exchange && req.method === 'POST') {
        const appId = validJwt((req.headers.authorization ?? '').replace(/^bearer\s+/i, ''));
        const app = appId === undefined ? undefined : apps.get(appId);
        if (!app || app.installationId !== Number(exchange[1])) return json(res, 401, { message: 'A JSON web token could not be decoded' });
        const issued = `ghs_${randomBytes(18).toString('hex')}`;
        const expires = Date.now() + app.ttlSeconds * 1_000;
        installationTokens.set(issued, expires);
        return json(res, 201, { token: issued, expires_at: new Date(expires).toISOString() });
      }
      if (!auth.ok) return json(res, 401, { message: 'Bad credentials' });
      const fault = faults.find((f) => f.method === req.method && f.path.test(url.pathname));
      if (fault) {
        fault.times = (fault.times ?? 1) - 1;
        if (fault.times <= 0) faults.splice(faults.indexOf(fault), 1);
        return json(res, fault.status, fault.body ?? { message: `stand-in fault ${fault.status}` }, fault.headers);
      }
      for (const [method, pattern, handler] of routes) {
        const m = pattern.exec(url.pathname);
        if (m && method === req.method) return await handler(m, req, res, url);
      }
      json(res, 404, { message: 'Not Found (not in the stand-in)' });
    })().catch((error: unknown) => {
      const status = (error as { status?: number }).status ?? 500;
      if (!res.headersSent) json(res, status, { message: error instanceof Error ? error.message : String(error) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let appIds = 100;
  return {
    url: base,
    token,
    requests,
    get installationTokens() { return [...installationTokens.keys()]; },
    createApp(ttlSeconds = 3_600) {
      const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const appId = (appIds += 1);
      const installationId = appId * 10;
      apps.set(appId, { publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(), installationId, ttlSeconds });
      return { appId, installationId, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    },
    async createRepo(fullName, files = { 'README.md': `# ${fullName}\n` }) {
      const bareDir = join(root.path, `${fullName}.git`);
      const seed = await createTempRepo({ files });
      await execa('git', ['clone', '--quiet', '--bare', seed.path, bareDir], { env: gitTestEnv() });
      // Pushes over HTTP need receive-pack enabled for the bare repository.
      await execa('git', ['config', 'http.receivepack', 'true'], { cwd: bareDir, env: gitTestEnv() });
      await seed.dispose();
      repos.set(fullName.toLowerCase(), { bareDir, next: 0, issues: new Map(), pulls: new Map(), comments: new Map(), permissions: new Map(), creations: new Map(), events: [], reviewComments: [] });
      return { cloneUrl: `${base}/${fullName}.git`, bareDir };
    },
    createIssue(fullName, input) {
      const state = repo(fullName);
      state.next += 1;
      const issue: StandInIssue = {
        number: state.next, title: input.title, body: input.body ?? '', user: { login: input.user ?? 'octocat' },
        labels: (input.labels ?? []).map((name) => ({ name })), state: 'open', updated_at: now(),
      };
      state.issues.set(issue.number, issue);
      return issue;
    },
    addReviewComment(fullName, pull, reviewId, c) {
      repo(fullName).reviewComments.push({ review_id: reviewId, pull_number: pull, path: c.path, line: c.line, body: c.body, user: { login: c.user } });
    },
    commentAs(fullName, issueNumber, login, body) {
      const comment: StandInComment = { id: (commentIds += 1), issue_number: issueNumber, body, user: { login }, created_at: now(), updated_at: now() };
      repo(fullName).comments.set(comment.id, comment);
      return comment;
    },
    labelIssue(fullName, issueNumber, label, actor) {
      const state = repo(fullName);
      const issue = state.issues.get(issueNumber);
      if (!issue) throw new Error(`no issue ${issueNumber} in ${fullName}`);
      if (!issue.labels.some((l) => l.name.toLowerCase() === label.toLowerCase())) issue.labels.push({ name: label });
      addEvent(state, issueNumber, label, actor);
    },
    repoDir: (fullName) => repo(fullName).bareDir,
    setPermission(fullName, login, permission) { repo(fullName).permissions.set(login.toLowerCase(), permission); },
    pulls: (fullName) => [...repo(fullName).pulls.values()],
    comments: (fullName, n) => [...repo(fullName).comments.values()].filter((c) => c.issue_number === n),
    labels: (fullName, n) => (item(repo(fullName), n)?.labels ?? []).map((l) => l.name),
    prCreations: (fullName, head) => repo(fullName).creations.get(head) ?? 0,
    failNext(rule) { faults.push({ ...rule }); },
    async close() {
      await new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
      await root.dispose();
    },
  };
}
