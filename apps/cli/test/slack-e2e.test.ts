import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  gitTestEnv,
  startFixture,
  startSlackStandIn,
  waitFor,
  type FixtureProcess,
  type SlackStandIn,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { runCli } from '../src/index.js';
import { bin } from './cli-helpers.js';

// The whole chat path on real parts: a mention in a Slack thread (the Slack STAND-IN, Socket
// Mode) reaches `codefleet serve` (the real binary, Bolt inside), becomes one job even though
// Slack delivers it three times, a real `codefleet worker` runs it (scripted agent, real git,
// the sandbox, the local forge), and the thread shows the outcome: the status message edited
// to the pull request, one final reply, and the ✅ reaction.
describe('Slack end to end: mention → serve → worker → the thread', () => {
  let dir: TempDir;
  let repo: TempRepo;
  let slack: SlackStandIn;
  let serve: FixtureProcess | undefined;
  beforeEach(async () => {
    dir = await createTempDir('cli-slack');
    repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
    slack = await startSlackStandIn();
  });
  afterEach(async () => {
    serve?.kill('SIGKILL');
    await serve?.exited;
    serve = undefined;
    await slack.close();
    await repo.dispose();
    await dir.dispose();
  });

  it('a mention retried by Slack becomes one job whose pull request reaches the thread', async () => {
    await mkdir(join(dir.path, 'agent'));
    const agent = join(dir.path, 'agent', 'agent.mjs');
    await writeFile(
      agent,
      "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'a line from slack\\n');\n",
    );
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'serve:\n  port: 0',
        'logging:',
        '  level: silent',
        'agents:',
        '  default: script',
        '  script:',
        `    module: ${agent}`,
        'router:',
        '  classifier:',
        '    enabled: false',
        'slack:',
        '  enabled: true',
        `  api_url: ${slack.apiUrl}`,
        '  allowed_users: [U0ALICE]',
        '  channels:',
        `    C0REPO: { repo: ${JSON.stringify(repo.path)} }`,
        '',
      ].join('\n'),
    );
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir.path,
      ...gitTestEnv(),
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
    };
    serve = startFixture(bin, ['--config', join(dir.path, 'config.yaml'), 'serve'], { cwd: dir.path, env });
    await waitFor(() => slack.socket.connections === 1, {
      what: `a Socket Mode connection (${serve!.stderr})`,
    });

    // The calls from here on are the mention's (serve's own at startup, auth.test, are not).
    const before = slack.calls.length;
    const { ts, body } = slack.mention({
      channel: 'C0REPO',
      user: 'U0ALICE',
      text: `<@${slack.botUserId}> /code append a line to notes.txt`,
    });
    await slack.socket.deliverEvent(body, { retries: 2 });
    const bots = () => slack.thread('C0REPO', ts).filter((m) => m.bot_id !== undefined);
    await waitFor(() => bots()[0]?.text.includes('Queued as job'), {
      what: 'the status message saying queued',
    });

    // A worker runs the job and reports to the thread with the bot token.
    const out: string[] = [];
    const code = await runCli(['--config', join(dir.path, 'config.yaml'), 'worker', '--once'], {
      out: (l) => out.push(l),
      err: () => undefined,
      cwd: dir.path,
      env,
    });
    expect(code).toBe(0);
    expect(out.join('\n')).toContain('processed 1: 1 done');

    const [status, final, ...more] = bots();
    expect(more).toEqual([]);
    expect(status!.text).toMatch(/pull request #1/i);
    expect(final!.text).toMatch(/pull request #1/i);
    expect(final!.text).toContain('local://');
    expect(Object.keys(slack.message('C0REPO', ts)?.reactions ?? {})).toEqual(['white_check_mark']);
    // A mention that becomes a PR costs at most a dozen Web API calls, retried deliveries included.
    // Socket Mode's own reconnects (`apps.connections.open`, when a loaded machine misses a
    // ping) are the connection's, not the mention's.
    const methods = slack.calls
      .slice(before)
      .map((call) => call.method)
      .filter((method) => method !== 'apps.connections.open');
    expect(`${methods.length} calls: ${methods.join(', ')}`).toMatch(/^([0-9]|1[0-2]) calls/);
    // One job, however often Slack delivered the mention.
    const runs: string[] = [];
    await runCli(['--config', join(dir.path, 'config.yaml'), 'runs', '--json'], {
      out: (l) => runs.push(l),
      err: () => undefined,
      cwd: dir.path,
      env,
    });
    expect((JSON.parse(runs.join('\n')) as unknown[]).length).toBe(1);
  });
  it('a mention in the thread of a queued job is kept and runs as its follow-up, on the same branch, once the job ends', async () => {
    await mkdir(join(dir.path, 'agent'));
    const agent = join(dir.path, 'agent', 'agent.mjs');
    await writeFile(
      agent,
      "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'a line from slack\\n');\n",
    );
    const config = join(dir.path, 'config.yaml');
    await writeFile(
      config,
      [
        'data_dir: ./data',
        'serve:\n  port: 0',
        'logging:',
        '  level: silent',
        'agents:',
        '  default: script',
        '  script:',
        `    module: ${agent}`,
        'router:',
        '  classifier:',
        '    enabled: false',
        'slack:',
        '  enabled: true',
        `  api_url: ${slack.apiUrl}`,
        '  allowed_users: [U0ALICE]',
        '  channels:',
        `    C0REPO: { repo: ${JSON.stringify(repo.path)} }`,
        '',
      ].join('\n'),
    );
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir.path,
      ...gitTestEnv(),
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
    };
    serve = startFixture(bin, ['--config', config, 'serve'], { cwd: dir.path, env });
    await waitFor(() => slack.socket.connections === 1, {
      what: `a Socket Mode connection (${serve!.stderr})`,
    });
    const cli = async (...args: string[]) => {
      const out: string[] = [];
      const code = await runCli(['--config', config, ...args], {
        out: (l) => out.push(l),
        err: () => undefined,
        cwd: dir.path,
        env,
      });
      return { code, out: out.join('\n') };
    };

    const root = slack.mention({
      channel: 'C0REPO',
      user: 'U0ALICE',
      text: `<@${slack.botUserId}> /code append a line to notes.txt`,
    });
    await slack.socket.deliverEvent(root.body);
    const bots = () => slack.thread('C0REPO', root.ts).filter((m) => m.bot_id !== undefined);
    await waitFor(() => bots()[0]?.text.includes('Queued as job'), { what: 'the first job queued' });

    // The first job has not run yet: the follow-up is kept, not turned back, however often delivered.
    const reply = slack.mention({
      channel: 'C0REPO',
      user: 'U0ALICE',
      text: `<@${slack.botUserId}> /code and one more line`,
      thread_ts: root.ts,
    });
    await slack.socket.deliverEvent(reply.body, { retries: 1 });
    const kept = await waitFor(() => bots().find((m) => m.text.includes('I kept your request')), {
      what: 'the kept status',
    });

    const drained = await cli('worker', '--once');
    expect(drained).toMatchObject({ code: 0, out: expect.stringMatching(/processed ([12]): \1 done/) });
    // The processor tries again with backoff (10 s first): it finds the job ended and queues the follow-up.
    await waitFor(() => slack.message('C0REPO', kept.ts)?.text.includes('Queued as job'), {
      what: 'the kept request queued',
    });
    // A worker slow enough (a loaded machine) took the follow-up in the same drain already.
    if (!drained.out.includes('processed 2: 2 done'))
      expect(await cli('worker', '--once')).toMatchObject({
        code: 0,
        out: expect.stringContaining('processed 1: 1 done'),
      });

    const summaries = JSON.parse((await cli('runs', '--json')).out) as {
      run_id: string;
      outcome?: string;
      pull_request?: unknown;
    }[];
    expect(summaries.map((r) => r.outcome)).toEqual(['succeeded', 'succeeded']);
    const runs = await Promise.all(
      summaries.map(
        async (r) =>
          JSON.parse((await cli('show', r.run_id, '--json')).out) as { job: { branch?: string }; branch?: string },
      ),
    );
    const first = runs.find((r) => r.job.branch === undefined);
    const second = runs.find((r) => r.job.branch !== undefined);
    expect(first?.branch).toMatch(/^ai\//);
    expect(second?.job.branch).toBe(first?.branch);
    expect(second?.branch).toBe(first?.branch);
    expect(slack.message('C0REPO', kept.ts)?.text).toMatch(/pull request #1/i);
    // Stopping ends the follow-up processor too.
    serve.kill('SIGTERM');
    expect((await serve.exited).exitCode).toBe(0);
  });
});
