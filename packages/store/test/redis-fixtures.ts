import type { Redis } from 'ioredis';
import { isTerminal, type RunRecord } from '@codefleet/core';
import { facetsOf } from '../src/query.js';
import { indexVersion, runIndexKeys, setsOf } from '../src/redis-run-index.js';
import { runVersion } from '../src/version.js';
import type { OldStore } from './contract-pages.js';

/**
 * Writes `runs` under `prefix` as the save script files them into an empty store (the index
 * version set too), pipelined with each set's members in one ZADD: thousands of runs in a
 * few round trips instead of one script call each.
 */
export async function fillRedis(raw: Redis, prefix: string, runs: readonly RunRecord[]): Promise<void> {
  const keys = runIndexKeys(`${prefix}:runs:`);
  const members = new Map<string, (string | number)[]>();
  const batch = raw.pipeline().set(keys.version, String(indexVersion));
  for (const run of runs) {
    const facets = facetsOf(run);
    const sets = setsOf(keys, facets);
    batch.hset(`${prefix}:runs:run:${run.run_id}`, {
      version: runVersion(run),
      record: JSON.stringify(run),
      indexed: JSON.stringify(sets),
    });
    for (const set of sets) {
      const scored = members.get(set) ?? [];
      scored.push(facets.createdMs, run.run_id);
      members.set(set, scored);
    }
  }
  for (const [set, scored] of members)
    for (let i = 0; i < scored.length; i += 2_000) batch.zadd(set, ...scored.slice(i, i + 2_000));
  await batch.exec();
}

/** What the version before the run indexes kept: the record, its facets, four kinds of sets. */
export async function writeFormerRedis(raw: Redis, prefix: string, old: OldStore): Promise<void> {
  const key = (name: string) => `${prefix}:runs:${name}`;
  for (const run of old.runs) {
    const created = Date.parse(run.created_at);
    const facets = { stage: run.stage, repo: run.job.repo, source: run.job.source.kind };
    await raw.hset(
      key(`run:${run.run_id}`),
      'version',
      runVersion(run),
      'record',
      JSON.stringify(run),
      'facets',
      JSON.stringify(facets),
    );
    await raw.zadd(key('by-created'), created, run.run_id);
    await raw.zadd(key(`by-repo:${run.job.repo}`), created, run.run_id);
    await raw.zadd(key(`by-source:${run.job.source.kind}`), created, run.run_id);
    if (!isTerminal(run.stage)) await raw.zadd(key('active'), created, run.run_id);
  }
  const { runId, createdAt } = old.notJson;
  await raw.hset(key(`run:${runId}`), 'version', '000000', 'record', '{"run_id": "half a rec');
  await raw.zadd(key('by-created'), Date.parse(createdAt), runId);
  await raw.set(key('indexes-complete'), '1');
}
