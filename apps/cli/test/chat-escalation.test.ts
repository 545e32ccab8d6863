import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createTempDir, createTempRepo, type TempDir, type TempRepo } from '@codefleet/testkit';
import { cli } from './cli-helpers.js';

// A /code2 message whose route names an escalation chain runs that chain, through the real
// binary: `codefleet chat` enqueues, `codefleet worker --once` runs the job on the real
// pipeline, `codefleet show --json` reads the run.
describe('codefleet chat with an escalation chain', () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-chain');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    // Both tiers run this script (the sandbox lets it write nothing but the copy): it changes
    // nothing unless its prompt says an earlier tier gave up, so tier 1 (one fix attempt) gives
    // up and tier 2, told so, appends a line.
    await mkdir(join(dir.path, 'agent'));
    const agent = join(dir.path, 'agent', 'agent.mjs');
    await writeFile(
      agent,
      [
        "import fs from 'node:fs';",
        'const arg = (name) => process.argv[process.argv.indexOf(name) + 1];',
        "if (fs.readFileSync(arg('--prompt-file'), 'utf8').includes('Another agent tried this task first')) {",
        "  fs.appendFileSync(arg('--workdir') + '/notes.txt', 'more\\n');",
        '}',
      ].join('\n'),
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'logging:',
        '  level: silent',
        'worker:',
        '  max_retries: 0',
        '  max_fix_attempts: 1',
        'agents:',
        '  default: script',
        '  script:',
        `    module: ${agent}`,
        '  profiles:',
        '    first-try: { agent: script }',
        '    second-try: { agent: script }',
        '  chains:',
        '    cheap-first: [first-try, second-try]',
        'router:',
        '  routes:',
        '    CODE2: { agent: cheap-first }',
        '',
      ].join('\n'),
    );
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  it('a CODE2 message whose route names a chain runs that chain, tier 2 solving it', async () => {
    const queued = await cli(dir.path, 'chat', '/code2 Append a line to notes.txt', '--repo', repo.path);
    expect(queued.code).toBe(0);
    const id = /^enqueued ([0-9a-f-]{36})$/m.exec(queued.out)?.[1];
    expect(id).toBeDefined();
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');
    const run = JSON.parse((await cli(dir.path, 'show', id!, '--json')).out) as {
      job: { agent?: string };
      outcome: string;
      chain?: unknown;
      tiers?: { tier: number; profile: string; outcome: string }[];
    };
    expect(run).toMatchObject({
      outcome: 'succeeded',
      job: { agent: 'cheap-first' },
      chain: { name: 'cheap-first', tiers: ['first-try', 'second-try'] },
    });
    expect(run.tiers?.map((t) => [t.tier, t.profile, t.outcome])).toEqual([
      [0, 'first-try', 'failed'],
      [1, 'second-try', 'succeeded'],
    ]);
  });
});
