import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { GithubForge } from '@codefleet/forge';
import { cancelFromIssue, triggerFromIssue, type TriggerDeps, type TriggerOutcome } from './trigger.js';

/** What the poller reads GitHub through: the forge adapter (one client, one error mapping). */
export type PollDeps = TriggerDeps & { forge: TriggerDeps['forge'] & Pick<GithubForge, 'labeledIssues' | 'labelEvents' | 'commentsSince'> };

/** Settings of {@link createPoller}. */
export interface PollOptions {
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
export function createPoller(deps: PollDeps, options: PollOptions): { pollOnce(): Promise<TriggerOutcome[]> } {
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

  return {
    async pollOnce() {
      const cursor = load();
      const outcomes: TriggerOutcome[] = [];
      for (const repo of options.repos) {
        const state = (cursor.repos[repo.toLowerCase()] ??= { handled: [] });
        const handled = new Set(state.handled);
        for (const issueNumber of await deps.forge.labeledIssues(repo, options.triggerLabel)) {
          for (const event of await deps.forge.labelEvents(repo, issueNumber, options.triggerLabel)) {
            if (handled.has(event.id)) continue;
            outcomes.push(await triggerFromIssue(deps, { repo, issueNumber, actor: event.actor, via: `poll event ${event.id}` }));
            handled.add(event.id);
            state.handled = [...handled].slice(-keepHandled);
            save(cursor);
          }
        }
        // The first poll of a repository starts from now: old comments are history, not commands.
        const comments = (state.comments ??= { since: new Date().toISOString(), handled: [] });
        const seen = new Set(comments.handled);
        for (const comment of await deps.forge.commentsSince(repo, comments.since)) {
          if (seen.has(comment.id)) continue;
          const command = /^\s*\/codefleet\s+(retry|cancel)\b/i.exec(comment.body)?.[1]?.toLowerCase();
          if (command !== undefined && Number.isInteger(comment.issueNumber) && comment.author !== '') {
            const request = { repo, issueNumber: comment.issueNumber, actor: comment.author, via: `poll comment ${comment.id}` };
            outcomes.push(command === 'cancel' ? await cancelFromIssue(deps, request) : await triggerFromIssue(deps, request));
          }
          seen.add(comment.id);
          comments.handled = [...seen].slice(-keepHandled);
          if (comment.updatedAt > (comments.since ?? '')) comments.since = comment.updatedAt;
          save(cursor);
        }
      }
      save(cursor);
      return outcomes;
    },
  };
}
