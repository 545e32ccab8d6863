import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { createJob, type Job } from '@codefleet/core';
import { formatRun, formatRuns } from '../format.js';
import type { Runtime } from '../runtime.js';

/** Options of `codefleet enqueue`. */
export interface EnqueueOptions {
  repo: string;
  title: string;
  body?: string;
  bodyFile?: string;
  agent?: string;
  base?: string;
  type?: Job['type'];
  priority?: Job['priority'];
  dod?: string[];
  requestedBy?: string;
}

/** A repo given as a relative local path is made absolute; owner/name and URLs stay as given. */
export function normalizeRepo(repo: string, cwd: string): string {
  const looksLocal = repo.startsWith('.') || (!repo.includes('://') && !/^[\w.-]+\/[\w.-]+$/.test(repo) && !/^[\w.-]+@[\w.-]+:/.test(repo));
  return looksLocal && !isAbsolute(repo) ? resolve(cwd, repo) : repo;
}

/** Builds a CLI job (validated: a bad field is a clear error naming it) and enqueues it. */
export async function enqueue(rt: Runtime, options: EnqueueOptions, cwd = process.cwd()): Promise<{ id: string; deduplicated: boolean }> {
  const body = options.bodyFile !== undefined ? await readFile(options.bodyFile, 'utf8') : options.body ?? '';
  const job = createJob({
    repo: normalizeRepo(options.repo, cwd),
    source: { kind: 'cli' },
    title: options.title,
    body,
    requested_by: options.requestedBy ?? rt.loaded.env.USER ?? 'cli',
    ...(options.agent ? { agent: options.agent } : {}),
    ...(options.base ? { base_branch: options.base } : {}),
    ...(options.type ? { type: options.type } : {}),
    ...(options.priority ? { priority: options.priority } : {}),
    ...(options.dod && options.dod.length > 0 ? { dod: options.dod } : {}),
  }, { id: randomUUID(), now: new Date() });
  return rt.queue.enqueue(job);
}

/** `codefleet runs`. */
export async function listRuns(rt: Runtime, json: boolean): Promise<string> {
  const runs = await rt.store.list({ limit: 50 });
  return json ? JSON.stringify(runs, null, 2) : formatRuns(runs);
}

/** `codefleet show <run-id>`; undefined when there is no such run. */
export async function showRun(rt: Runtime, runId: string, json: boolean): Promise<string | undefined> {
  const run = await rt.store.get(runId);
  if (!run) return undefined;
  return json ? JSON.stringify(run, null, 2) : formatRun(run);
}

/** `codefleet dlq list`. */
export async function listDeadLetters(rt: Runtime, json: boolean): Promise<string> {
  const dead = await rt.queue.deadLetters({ limit: 100 });
  if (json) return JSON.stringify(dead, null, 2);
  if (dead.length === 0) return 'dead-letter queue is empty';
  return dead.map((d) => `${d.id}  attempts ${d.attempts}  ${new Date(d.deadAt).toISOString()}  ${d.job?.title ?? '(malformed)'}\n    reason: ${d.reason.split('\n')[0]}`).join('\n');
}
