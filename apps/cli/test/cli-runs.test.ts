import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createLocalForge } from '@codefleet/forge';
import {
  createTempDir,
  createTempRepo,
  gitTestEnv,
  startFixture,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin, cli } from './cli-helpers.js';

// What a terminal would act on: C0 and C1 controls, DEL, bidirectional overrides.
// eslint-disable-next-line no-control-regex -- control characters are what is looked for
const terminalControls = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

// A title as an outside user can write it in a GitHub issue: a screen clear, a window
// title set with BEL, a CSI in its one-byte C1 form, a right-to-left override, line breaks.
const hostileTitle = 'Fix \u001b[2J\u001b]0;pwned\u0007 the\nparser\r\u009b31m\u202eok';
const shownTitle = 'Fix \uFFFD[2J\uFFFD]0;pwned\uFFFD the parser \uFFFD31m\uFFFDok';

describe('runs, show and dlq list', () => {
  let dir: TempDir;
  let repo: TempRepo;
  beforeEach(async () => {
    dir = await createTempDir('cli-runs');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    // The agent changes nothing until the marker file exists: the job fails (no changes)
    // and, with no retries, is dead-lettered; once "fixed", it appends a line.
    // The agent's own directory is what the sandbox shows it besides the copy: its marker lives there.
    await mkdir(join(dir.path, 'agent'));
    const agent = join(dir.path, 'agent', 'agent.mjs');
    await writeFile(
      agent,
      [
        "import fs from 'node:fs';",
        `if (fs.existsSync(${JSON.stringify(join(dir.path, 'agent', 'fixed'))})) {`,
        "  const w = process.argv[process.argv.indexOf('--workdir') + 1];",
        "  fs.appendFileSync(w + '/notes.txt', 'more\\n');",
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
        '',
      ].join('\n'),
    );
  });
  afterEach(async () => {
    await repo.dispose();
    await dir.dispose();
  });

  const enqueue = async (title: string) => {
    const queued = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', title);
    expect(queued).toMatchObject({ code: 0, err: '' });
    return queued.out.replace('enqueued ', '');
  };

  it('print control characters and line breaks of a title safely; JSON keeps it exact', async () => {
    await writeFile(join(dir.path, 'agent', 'fixed'), '');
    const id = await enqueue(hostileTitle);
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');

    const runs = await cli(dir.path, 'runs');
    expect(runs.out).not.toMatch(terminalControls);
    // Its pull request is open on the local forge: the task is open, awaiting review.
    expect(runs.out.split('\n')).toEqual([
      expect.stringMatching(/^RUN +STATUS +STAGE/),
      expect.stringMatching(new RegExp(`^${id} +open +done +succeeded +1 +#1 +`)),
    ]);
    expect(runs.out.split('\n')[1]!.endsWith(shownTitle)).toBe(true);

    const shown = await cli(dir.path, 'show', id);
    expect(shown.code).toBe(0);
    expect(shown.out).not.toMatch(terminalControls);
    expect(shown.out.split('\n')[0]).toBe(shownTitle);
    expect(shown.out.split('\n')[1]).toMatch(new RegExp(`^run ${id} · `));

    expect(shown.out.split('\n')[2]).toBe('status open (PR #1 awaiting review)');

    expect(JSON.parse((await cli(dir.path, 'runs', '--json')).out)).toMatchObject([
      { run_id: id, title: hostileTitle, status: 'open', status_certain: true },
    ]);
    expect(JSON.parse((await cli(dir.path, 'show', id, '--json')).out)).toMatchObject({
      run_id: id,
      job: { title: hostileTitle },
    });
  });

  it('runs and show derive the status from the PR: merged is done, and a forge that cannot open leaves it open?', async () => {
    await writeFile(join(dir.path, 'agent', 'fixed'), '');
    const id = await enqueue('Append a line');
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');
    const forge = createLocalForge({
      dbPath: join(dir.path, 'data', 'forge.sqlite'),
      gitEnv: { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() },
    });
    try {
      forge.mergePullRequest(repo.path, 1);
    } finally {
      await forge.close();
    }
    expect((await cli(dir.path, 'runs')).out.split('\n')[1]).toMatch(new RegExp(`^${id} +done +done +succeeded `));
    expect((await cli(dir.path, 'show', id)).out.split('\n')[2]).toBe('status done (PR #1 merged)');
    // A forge that cannot answer for these runs (GitHub, nowhere to reach; any variable that
    // is set serves as its token): the listing still works, and says why once.
    await writeFile(
      join(dir.path, 'config.yaml'),
      `${await readFile(join(dir.path, 'config.yaml'), 'utf8')}forge:\n  type: github\n  github:\n    token_env: HOME\n    api_url: http://127.0.0.1:9/\n`,
    );
    const runs = await cli(dir.path, 'runs');
    expect(runs.err).toBe('');
    expect(runs.code).toBe(0);
    expect(runs.out.split('\n')[1]).toMatch(new RegExp(`^${id} +open\\? +done +succeeded `));
    expect(runs.out).toMatch(/open\?: the pull request's state could not be read \(.+\)$/);
  });

  it('show names the later run of a job redriven from the dead-letter queue', async () => {
    const id = await enqueue(hostileTitle);
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 0 done, 0 retrying, 1 dead-lettered');
    const dead = await cli(dir.path, 'dlq', 'list');
    expect(dead.out).not.toMatch(terminalControls);
    expect(dead.out.split('\n')[0]).toMatch(
      new RegExp(`^${id}  attempts 1  \\S+  ${shownTitle.replace(/[[\]]/g, '\\$&')}$`),
    );
    // Before the redrive, there is no later run to mention.
    expect((await cli(dir.path, 'show', id)).out).not.toContain('later run');

    await writeFile(join(dir.path, 'agent', 'fixed'), '');
    expect(await cli(dir.path, 'dlq', 'redrive', id)).toMatchObject({ code: 0, out: `redriven ${id}` });
    expect((await cli(dir.path, 'worker', '--once')).out).toContain('processed 1: 1 done');

    const first = await cli(dir.path, 'show', id);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(new RegExp(`^run ${id} · .* · stage failed · outcome failed`, 'm'));
    expect(first.out).toContain(`later run: ${id}~2 (stage done, outcome succeeded; see \`codefleet show ${id}~2\`)`);
    const second = await cli(dir.path, 'show', `${id}~2`);
    expect(second.out).toMatch(new RegExp(`^run ${id}~2 · .* · stage done · outcome succeeded`, 'm'));
    expect(second.out).not.toContain('later run');
    // The redriven run lists under source redrive, its failed run under the job's own source.
    const redriven = JSON.parse((await cli(dir.path, 'runs', '--json', '--source', 'redrive')).out) as {
      run_id: string;
    }[];
    expect(redriven.map((r) => r.run_id)).toEqual([`${id}~2`]);
    // JSON stays the run record itself.
    expect(Object.keys(JSON.parse((await cli(dir.path, 'show', id, '--json')).out) as object)).not.toContain(
      'later_runs',
    );
  });
});

describe('a job whose worker died on its last attempt', () => {
  it('is reported by the next worker: run failed with the reason, failure comment on the task', async () => {
    const dir = await createTempDir('cli-died');
    const repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    try {
      // The agent says it started, then hangs: the worker is killed while it runs.
      const agent = join(dir.path, 'agent.mjs');
      await writeFile(agent, "console.log('agent started'); setInterval(() => {}, 1000);\n");
      await writeFile(
        join(dir.path, 'config.yaml'),
        [
          'data_dir: ./data',
          'queue:',
          '  lease_seconds: 1',
          'worker:',
          '  max_retries: 0',
          'agents:',
          '  default: script',
          '  script:',
          `    module: ${agent}`,
          '',
        ].join('\n'),
      );
      const queued = await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Never finishes');
      const id = queued.out.replace('enqueued ', '');
      const env = { PATH: process.env.PATH ?? '', HOME: dir.path, ...gitTestEnv() };
      const first = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'worker'], { cwd: dir.path, env });
      await first.waitForLine(/"stage":"implementing"/);
      first.kill('SIGKILL');
      await first.exited;
      // The lease runs out; the next worker finds the attempts spent and reports the job.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const second = await cli(dir.path, 'worker', '--once');
      expect(second.code).toBe(0);
      const shown = JSON.parse((await cli(dir.path, 'show', id, '--json')).out) as {
        stage: string;
        error: { code: string; message: string };
      };
      expect(shown).toMatchObject({
        stage: 'failed',
        error: { code: 'lease_lost', message: expect.stringContaining('dead-lettered without finishing') },
      });
      const forge = createLocalForge({ dbPath: join(dir.path, 'data', 'forge.sqlite'), gitEnv: env });
      try {
        const job = JSON.parse((await cli(dir.path, 'dlq', 'list', '--json')).out) as {
          job: { idempotency_key: string };
        }[];
        const comments = await forge.listComments(repo.path, { kind: 'task', key: job[0]!.job.idempotency_key });
        expect(comments.map((c) => c.body)).toEqual([
          expect.stringMatching(/could not complete this task \(`lease_lost`\)[\s\S]*Status: failed/),
        ]);
      } finally {
        await forge.close();
      }
      // Reported once: the next look finds nothing more to say.
      expect((await cli(dir.path, 'worker', '--once')).code).toBe(0);
    } finally {
      await repo.dispose();
      await dir.dispose();
    }
  });
});

describe('a job whose checks keep failing', () => {
  it('dlq list sums the real reason up in one line; show prints the whole of it', async () => {
    const dir = await createTempDir('cli-reason');
    // The repository's test step passes on the base and fails once the agent has changed
    // notes.txt, whatever else it does: the pipeline gives up with its "still failing … Last
    // feedback:" reason.
    const repo = await createTempRepo({
      files: {
        'notes.txt': 'hello\n',
        'check.cjs':
          "if (require('fs').readFileSync('notes.txt', 'utf8').includes('more')) { console.log('not ok 1 - multiplies'); process.exit(1); }\n",
        '.codefleet.yml': 'verify:\n  test: [node, check.cjs]\n',
      },
    });
    try {
      const agent = join(dir.path, 'agent.mjs');
      await writeFile(
        agent,
        [
          "import fs from 'node:fs';",
          "const w = process.argv[process.argv.indexOf('--workdir') + 1];",
          "fs.appendFileSync(w + '/notes.txt', 'more\\n');",
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
          '',
        ].join('\n'),
      );
      const id = (await cli(dir.path, 'enqueue', '--repo', repo.path, '--title', 'Add multiply')).out.replace(
        'enqueued ',
        '',
      );
      expect((await cli(dir.path, 'worker', '--once')).out).toContain('1 dead-lettered');

      const reason = (JSON.parse((await cli(dir.path, 'dlq', 'list', '--json')).out) as { reason: string }[])[0]!
        .reason;
      expect(reason).toMatch(/still failing after 1 attempts\. Last feedback:\n/);
      const listed = (await cli(dir.path, 'dlq', 'list')).out.split('\n');
      expect(listed[1]).toBe(
        '    reason: fix_attempts_exhausted: pass test: still failing after 1 attempts — Step test failed (exit 1): node check.cjs',
      );

      const shown = (await cli(dir.path, 'show', id)).out.split('\n');
      expect(shown[3]).toMatch(
        /^error fix_attempts_exhausted \(\w+\): pass test: still failing after 1 attempts — Step test failed \(exit 1\): node check\.cjs/,
      );
      const whole = shown.slice(shown.indexOf('Reason:'));
      expect(whole[1]).toBe('  pass test: still failing after 1 attempts. Last feedback:');
      expect(whole[2]).toMatch(/^ {2}Step test failed \(exit 1\): node check\.cjs/);
      expect(whole.join('\n')).toContain('not ok 1 - multiplies');
      expect(shown).toContain('Changed files (1):');
      expect(shown).toContain('  notes.txt');
    } finally {
      await repo.dispose();
      await dir.dispose();
    }
  });
});
