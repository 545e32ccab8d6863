import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { openSqlite } from '@codefleet/sqlite';
import { createTempDir } from '@codefleet/testkit';
import { createJob, newRun } from '@codefleet/core';
import { SqliteRunStore, type RunQuery } from '../src/index.js';
import { writeCursor } from '../src/page-cursor.js';
import { checkQuery } from '../src/query.js';
import { candidatesOf, cappedCountSql, chooseIndex, countSql, pageSql, planOf } from '../src/sqlite-run-reads.js';

const since = '2026-01-01T00:00:00Z';
const cursor = writeCursor({ ms: Date.UTC(2026, 1, 1), runId: 'job-9' });

/** Every filter alone, with a time window, with a cursor, and the pairs an operator asks for. */
const queries: RunQuery[] = [
  {},
  { since },
  { cursor },
  { state: 'active' },
  { state: 'failed' },
  { state: 'succeeded', cursor },
  { state: 'testing' },
  { state: 'done' },
  { repo: 'acme/widgets' },
  { source: 'github-issue' },
  { source: 'chat' },
  { agent: 'codex', since, until: '2026-02-01T00:00:00Z' },
  { repo: 'acme/widgets', state: 'active' },
  { repo: 'acme/widgets', state: 'failed', cursor },
  { repo: 'acme/widgets', state: 'implementing' },
  { state: 'active', agent: 'codex' },
  { agent: 'codex', source: 'slack' },
  { repo: 'acme/widgets', state: 'failed', agent: 'codex', source: 'chat', since },
];

describe('SQLite run store reads', () => {
  it('answer every filter through one index, in page order: no table scan, no sort', async () => {
    const dir = await createTempDir('store');
    const path = join(dir.path, 'runs.sqlite');
    await new SqliteRunStore(path).close();
    const db = openSqlite(path);
    try {
      // Through the guessed index and every other one a query with a filter to probe may walk.
      const walks = queries.flatMap((query) => candidatesOf(checkQuery(query)).map((index) => ({ query, index })));
      expect(walks.length).toBeGreaterThan(queries.length);
      for (const { query, index } of walks) {
        const q = checkQuery(query);
        const filtered = Object.keys(query).some((key) => key !== 'cursor');
        // Choosing among them counts each one's runs through that index alone, reading no row.
        const capped = cappedCountSql(q, index);
        const counting = db.prepare(`EXPLAIN QUERY PLAN ${capped.sql}`).all(...capped.args, 5) as { detail: string }[];
        expect(counting.map((row) => row.detail)).toContainEqual(
          expect.stringMatching(
            filtered
              ? new RegExp(`^SEARCH runs USING COVERING INDEX ${index} \\(`)
              : new RegExp(`^(SEARCH|SCAN) runs USING COVERING INDEX ${index}\\b`),
          ),
        );
        for (const [read, { sql, args }] of [
          ['page', pageSql(q, index)],
          ['count', countSql(q, index)],
        ] as const) {
          const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map(
            (row) => row.detail,
          );
          // A bounded walk: a SEARCH of the chosen index, or, with nothing to filter on, that index in
          // order (SQLite counts every run through whichever index is smallest).
          const walk = filtered
            ? new RegExp(`^SEARCH runs USING (COVERING )?INDEX ${index} \\(`)
            : read === 'count'
              ? /^SCAN runs USING COVERING INDEX /
              : new RegExp(`^(SEARCH|SCAN) runs USING (COVERING )?INDEX ${index}\\b`);
          // Every other filter: a probe of its own index at the run's place in the order.
          const probe = /^SEARCH f EXISTS USING COVERING INDEX runs_by_\w+ \(\w+=\? AND created_ms=\? AND run_id=\?\)$/;
          const probes = plan.slice(1).map(() => expect.stringMatching(probe));
          expect({ query, plan }).toEqual({ query, plan: [expect.stringMatching(walk), ...probes] });
        }
      }
      // The rows an older writer left stale are found through their partial index.
      const stale = db.prepare('EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE facets_version IS NOT version').all();
      expect(stale).toEqual([
        expect.objectContaining({ detail: expect.stringMatching(/USING (COVERING )?INDEX runs_stale/) }),
      ]);
    } finally {
      db.close();
      await dir.dispose();
    }
  });

  it('guess the most selective index: active runs, then a repository, a source, an agent, a state', () => {
    const index = (query: RunQuery) => planOf(checkQuery(query)).index;
    expect(index({ agent: 'codex', source: 'slack' })).toBe('runs_by_source');
    expect(index({ state: 'active', source: 'cli', agent: 'codex' })).toBe('runs_by_active');
    expect(index({ state: 'testing', repo: 'r' })).toBe('runs_by_repo_stage');
    expect(index({ state: 'failed', repo: 'r', agent: 'codex' })).toBe('runs_by_repo_outcome');
    expect(index({ state: 'failed', agent: 'codex' })).toBe('runs_by_agent');
    expect(index({ state: 'done', source: 'slack' })).toBe('runs_by_source');
    expect(index({ state: 'done', source: 'api' })).toBe('runs_by_kind');
    expect(index({ state: 'done', since })).toBe('runs_by_stage');
    expect(index({ state: 'cancelled', since })).toBe('runs_by_outcome');
    expect(index({ until: since })).toBe('runs_by_created');
  });

  it('walk the filter that holds the fewest runs when the guess leaves one to probe; same page, same total', async () => {
    const dir = await createTempDir('store');
    const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
    const db = openSqlite(join(dir.path, 'runs.sqlite'));
    try {
      const now = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n));
      // 20 from issues (4 of them codex's), 2 from the CLI (codex's): codex has 6 runs, issues 20.
      for (let n = 1; n <= 22; n += 1) {
        const job = createJob(
          {
            repo: 'acme/widgets',
            source: n <= 20 ? { kind: 'issue', number: n } : { kind: 'cli' },
            title: `task ${n}`,
            body: '',
            requested_by: 'me',
            agent: n <= 16 ? 'claude' : 'codex',
          },
          { id: `job-${n}`, now: now(n) },
        );
        await store.save(newRun(job, { runId: `job-${n}`, now: now(n) }));
      }
      const cases: [RunQuery, string, string[]][] = [
        [{ agent: 'codex', source: 'github-issue' }, 'runs_by_agent', ['job-20', 'job-19', 'job-18', 'job-17']],
        [{ agent: 'claude', source: 'cli' }, 'runs_by_source', []],
        [{ agent: 'codex', source: 'cli', repo: 'acme/widgets' }, 'runs_by_source', ['job-22', 'job-21']],
      ];
      for (const [query, chosen, ids] of cases) {
        const q = checkQuery({ ...query, limit: 3 });
        expect({ query, index: chooseIndex(db, q) }).toEqual({ query, index: chosen });
        const page = await store.page({ ...query, limit: 3 });
        expect({ query, ids: page.runs.map((r) => r.runId), total: page.total }).toEqual({
          query,
          ids: ids.slice(0, 3),
          total: ids.length,
        });
        // Through the guessed index, the same.
        const guessed = db.prepare(countSql(q).sql).get(...countSql(q).args) as { n: number };
        expect(guessed.n).toBe(ids.length);
      }
    } finally {
      db.close();
      await store.close();
      await dir.dispose();
    }
  });
});
