import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Octokit } from '@octokit/rest';
import { githubFailure } from '@codefleet/forge';
import { cancelFromIssue, triggerFromIssue, type TriggerDeps, type TriggerOutcome } from './trigger.js';

/** Settings of {@link createPoller}. */
export interface PollOptions {
  /** The current token (a PAT, or a GitHub App's refreshed installation token). */
  token: () => Promise<string>;
  apiUrl: string;
  repos: readonly string[];
  triggerLabel: string;
  /** JSON file keeping the cursor: which label events were handled, per repository. */
  cursorPath: string;
}

/** What the poller remembers between runs (and restarts). */
interface Cursor {
  repos: Record<string, { handled: number[]; comments?: { since?: string; handled: number[] } }>;
}

/** How many handled event ids a repository keeps: far more than one poll ever sees. */
const keepHandled = 2_000;

/**
 * Polling mode, for hosts GitHub cannot reach (a Mac mini at home): every poll lists the
 * open issues carrying the trigger label, finds who added the label (the issue's
 * `labeled` events), and triggers each label event once; then the comments updated since
 * the last poll, for `/codefleet retry` and `/codefleet cancel`. The ids of handled events are
 * persisted (written to a temp file, then renamed) before the poll returns, so a restart
 * never handles an event twice; and if it crashed in between, the job's idempotency key
 * still makes the second trigger a duplicate.
 */
export function createPoller(deps: TriggerDeps, options: PollOptions): { pollOnce(): Promise<TriggerOutcome[]> } {
  const octokit = new Octokit({ baseUrl: options.apiUrl, request: { retries: 0 }, log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } });
  octokit.hook.before('request', async (request) => {
    request.headers.authorization = `token ${await options.token()}`;
  });
  const label = options.triggerLabel.toLowerCase();
  const load = (): Cursor => {
    try {
      return JSON.parse(readFileSync(options.cursorPath, 'utf8')) as Cursor;
    } catch {
      return { repos: {} };
    }
  };
  const save = (cursor: Cursor) => {
    mkdirSync(dirname(options.cursorPath), { recursive: true });
    const temp = `${options.cursorPath}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(cursor));
    renameSync(temp, options.cursorPath);
  };
  const call = async <T>(operation: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      throw githubFailure(operation, error);
    }
  };

  return {
    async pollOnce() {
      const cursor = load();
      const outcomes: TriggerOutcome[] = [];
      for (const full of options.repos) {
        const [owner = '', repo = ''] = full.split('/');
        const state = (cursor.repos[full.toLowerCase()] ??= { handled: [] });
        const handled = new Set(state.handled);
        const issues = await call('list labeled issues', () => octokit.paginate(octokit.rest.issues.listForRepo, { owner, repo, labels: options.triggerLabel, state: 'open', per_page: 100 }));
        for (const issue of issues) {
          if (issue.pull_request) continue;
          const events = await call('list issue events', () => octokit.paginate(octokit.rest.issues.listEvents, { owner, repo, issue_number: issue.number, per_page: 100 }));
          const labelEvents = events.filter((e) => e.event === 'labeled' && (e as { label?: { name?: string } }).label?.name?.toLowerCase() === label && !handled.has(e.id));
          for (const event of labelEvents) {
            const actor = event.actor?.login ?? '';
            outcomes.push(await triggerFromIssue(deps, { repo: full, issueNumber: issue.number, actor, via: `poll event ${event.id}` }));
            handled.add(event.id);
            state.handled = [...handled].slice(-keepHandled);
            save(cursor);
          }
        }
      }
      for (const full of options.repos) {
        const [owner = '', repo = ''] = full.split('/');
        const state = (cursor.repos[full.toLowerCase()] ??= { handled: [] });
        // The first poll of a repository starts from now: old comments are history, not commands.
        const comments = (state.comments ??= { since: new Date().toISOString(), handled: [] });
        const handled = new Set(comments.handled);
        const since = comments.since;
        const list = await call('list issue comments', () => octokit.paginate(octokit.rest.issues.listCommentsForRepo, {
          owner, repo, sort: 'updated', direction: 'asc', per_page: 100, ...(since === undefined ? {} : { since }),
        }));
        for (const comment of list) {
          if (handled.has(comment.id)) continue;
          const command = /^\s*\/codefleet\s+(retry|cancel)\b/i.exec(comment.body ?? '')?.[1]?.toLowerCase();
          const issueNumber = Number(/\/issues\/(\d+)$/.exec(comment.issue_url)?.[1]);
          if (command !== undefined && Number.isInteger(issueNumber) && comment.user?.login) {
            const request = { repo: full, issueNumber, actor: comment.user.login, via: `poll comment ${comment.id}` };
            outcomes.push(command === 'cancel' ? await cancelFromIssue(deps, request) : await triggerFromIssue(deps, request));
          }
          handled.add(comment.id);
          comments.handled = [...handled].slice(-keepHandled);
          if (comment.updated_at > (comments.since ?? '')) comments.since = comment.updated_at;
          save(cursor);
        }
      }
      save(cursor);
      return outcomes;
    },
  };
}
