import type { Job } from './job.js';
import type { RunRecord } from './run.js';

/**
 * What a job's source is, as `codefleet runs` shows and filters it:
 * - `github-issue`: a GitHub issue, by label or command;
 * - `ci-follow-up`: failed CI on a codefleet pull request, its issue's or one no issue owns;
 * - `review-follow-up`: a review on an issue's pull request;
 * - `slack`, `line`: a chat message on that platform;
 * - `http-api`: the HTTP API (its jobs, and chat platform `http`, its chat surface);
 * - `cli`: `codefleet run` or `codefleet chat`;
 * - `eval`: a task of `codefleet eval run`;
 * - `record`: a queue record a producer reads back (a GitHub delivery, a chat follow-up or inbox);
 * - `redrive`: a run of a job redriven out of the dead-letter queue (a run's, see {@link runSourceName}).
 */
export const sourceNames = [
  'github-issue',
  'ci-follow-up',
  'review-follow-up',
  'slack',
  'line',
  'http-api',
  'cli',
  'eval',
  'record',
  'redrive',
] as const;

/** A name of {@link sourceNames}, or the platform of any other chat. */
export type SourceName = (typeof sourceNames)[number] | (string & {});

// Request ids of `api` jobs queued before kinds `ci` and `record`: what they were.
const legacyRecordPrefixes = ['github-delivery:', 'chat-followup:', 'chat-inbox:'];

/** The name of where `job` came from (see {@link sourceNames}); never `redrive`, which is a run's. */
export function sourceName(job: Pick<Job, 'source'>): SourceName {
  const { source } = job;
  switch (source.kind) {
    case 'issue':
      if (source.via === 'ci') return 'ci-follow-up';
      return source.via === 'review' ? 'review-follow-up' : 'github-issue';
    case 'ci':
      return 'ci-follow-up';
    case 'chat':
      return source.platform === 'http' ? 'http-api' : source.platform;
    case 'cli':
      return 'cli';
    case 'eval':
      return 'eval';
    case 'record':
      return 'record';
    case 'api': {
      const id = source.request_id ?? '';
      if (source.callback_url === undefined && id.startsWith('ci:')) return 'ci-follow-up';
      return legacyRecordPrefixes.some((prefix) => id.startsWith(prefix)) ? 'record' : 'http-api';
    }
  }
}

/** The source name of a run: `redrive` when it is a redriven job's new run, else its job's. */
export function runSourceName(run: Pick<RunRecord, 'job' | 'redriven_from'>): SourceName {
  return run.redriven_from === undefined ? sourceName(run.job) : 'redrive';
}
