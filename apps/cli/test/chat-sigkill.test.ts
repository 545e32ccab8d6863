import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  freePort,
  gitTestEnv,
  startFixture,
  startLineStandIn,
  startOllamaStandIn,
  startSlackStandIn,
  waitFor,
  type FixtureProcess,
  type LineStandIn,
  type OllamaStandIn,
  type SlackStandIn,
  type TempDir,
  type TempRepo,
} from '@codefleet/testkit';
import { bin, openCliQueue } from './cli-helpers.js';

// A chat message acknowledged to the platform survives `codefleet serve` (the real binary)
// being SIGKILLed at any point: before the record (the platform was not answered, so it
// delivers again), and after the record while the message is being handled (the restarted
// process finishes it from the record). The Slack and LINE STAND-INs count what came back:
// one job, one status message, one answer.
describe('chat messages survive a SIGKILL of serve', () => {
  let dir: TempDir;
  let repo: TempRepo;
  let slack: SlackStandIn;
  let line: LineStandIn;
  let ollama: OllamaStandIn;
  let proc: FixtureProcess | undefined;
  beforeEach(async () => {
    dir = await createTempDir('cli-chat-kill');
    repo = await createTempRepo({ files: { 'README.md': '# x\n' } });
    slack = await startSlackStandIn();
    line = await startLineStandIn();
    ollama = await startOllamaStandIn({ models: ['qwen2.5-coder:1.5b'] });
  });
  afterEach(async () => {
    proc?.kill('SIGKILL');
    await proc?.exited;
    proc = undefined;
    await slack.close();
    await line.close();
    await ollama.close();
    await repo.dispose();
    await dir.dispose();
  });

  const env = () => ({
    PATH: process.env.PATH ?? '',
    HOME: dir.path,
    ...gitTestEnv(),
    SLACK_BOT_TOKEN: slack.botToken,
    SLACK_SIGNING_SECRET: slack.signingSecret,
    LINE_CHANNEL_SECRET: line.channelSecret,
    LINE_CHANNEL_ACCESS_TOKEN: line.accessToken,
  });

  /** Starts serve and waits for /healthz. */
  async function serve(healthPort: number): Promise<FixtureProcess> {
    const started = startFixture(
      bin,
      ['--config', join(dir.path, 'config.yaml'), 'serve', '--health-port', String(healthPort)],
      { cwd: dir.path, env: env() },
    );
    // A serve that exits first (a port taken between freePort and its listen) fails the wait
    // at once, saying why, instead of at the test's timeout.
    const gone = new AbortController();
    void started.exited.then((exit) =>
      gone.abort(new Error(`serve exited (${exit.exitCode ?? exit.signal}): ${started.stderr.slice(-2_000)}`)),
    );
    // Probed only once serve says it listens: until then a port from freePort() may be another
    // suite's on a busy machine, and a probe of it lands on (or is answered by) that suite's server.
    await started.waitForLine(/^serving on /);
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${healthPort}/healthz`).catch(() => undefined))?.ok === true,
      { what: "serve's /healthz", signal: gone.signal },
    );
    return started;
  }

  /** SIGSTOPs serve and waits until the kernel says it is stopped: a delivery now reaches its socket, never its code. */
  async function freeze(p: FixtureProcess): Promise<void> {
    p.kill('SIGSTOP');
    await waitFor(
      async () => (await readFile(`/proc/${p.pid}/stat`, 'utf8')).split(') ')[1]?.startsWith('T') === true,
      { what: 'serve stopped' },
    );
  }

  /** True once the kernel holds an established connection to `port` (a delivery waiting in a frozen process's socket). */
  async function connected(port: number): Promise<boolean> {
    const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
    const tables = await Promise.all(
      ['/proc/net/tcp', '/proc/net/tcp6'].map((f) => readFile(f, 'utf8').catch(() => '')),
    );
    // Columns: sl, local address, remote address, state (01: ESTABLISHED).
    return tables
      .join('\n')
      .split('\n')
      .some((row) => {
        const [, local, , state] = row.trim().split(/\s+/);
        return local?.endsWith(hex) === true && state === '01';
      });
  }

  async function kill(p: FixtureProcess): Promise<void> {
    p.kill('SIGKILL');
    expect((await p.exited).signal).toBe('SIGKILL');
  }

  async function queuedJobs(): Promise<number> {
    const queue = openCliQueue(dir.path);
    try {
      const stats = await queue.stats();
      return stats.ready + stats.inFlight + stats.delayed;
    } finally {
      await queue.close();
    }
  }

  it('Slack: one job and one status message per mention, killed before or after the record', async () => {
    const [slackPort, healthPort] = [await freePort(), await freePort()];
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'serve:\n  port: 0',
        'logging:\n  level: silent',
        'queue:\n  lease_seconds: 2',
        'router:\n  classifier:\n    enabled: false',
        `slack:\n  enabled: true\n  mode: http\n  port: ${slackPort}\n  api_url: ${slack.apiUrl}`,
        `  allowed_users: [U0ALICE]\n  channels:\n    C0REPO: { repo: ${JSON.stringify(repo.path)} }`,
        '',
      ].join('\n'),
    );
    const url = `http://127.0.0.1:${slackPort}/slack/events`;
    const bots = (ts: string) => slack.thread('C0REPO', ts).filter((m) => m.bot_id !== undefined);

    // Killed before the record: frozen with the delivery in its socket, then SIGKILLed. Slack got no 200.
    proc = await serve(healthPort);
    const first = slack.mention({
      channel: 'C0REPO',
      user: 'U0ALICE',
      text: `<@${slack.botUserId}> /code add a line to README.md`,
    });
    await freeze(proc);
    const unanswered = slack.postEvent(url, first.body).then(
      (r) => r.status,
      () => 'no answer',
    );
    await waitFor(() => connected(slackPort), { what: "the delivery in serve's socket" });
    await kill(proc);
    expect(await unanswered).toBe('no answer');
    expect(bots(first.ts)).toEqual([]);

    // Restarted, Slack's retry is handled.
    proc = await serve(healthPort);
    expect((await slack.postEvent(url, first.body, { retryNum: 1, retryReason: 'http_error' })).status).toBe(200);
    await waitFor(() => bots(first.ts)[0]?.text.includes('Queued as job'), {
      what: 'the first mention queued',
    });

    // Killed after the record, mid-way through handling it (its 👀 reaction sent, not yet answered).
    const second = slack.mention({
      channel: 'C0REPO',
      user: 'U0ALICE',
      text: `<@${slack.botUserId}> /code add another line to README.md`,
    });
    const held = slack.hold('reactions.add', (args) => args.timestamp === second.ts);
    expect((await slack.postEvent(url, second.body)).status).toBe(200);
    await waitFor(() => slack.calls.some((c) => c.method === 'reactions.add' && c.args.timestamp === second.ts), {
      what: 'the second mention being handled',
    });
    await kill(proc);
    held.release();
    expect(bots(second.ts)).toEqual([]);

    // Slack sends nothing again (it had its 200): the restarted process finds the record.
    proc = await serve(healthPort);
    await waitFor(() => bots(second.ts)[0]?.text.includes('Queued as job'), {
      what: 'the second mention queued after the restart',
    });
    proc.kill('SIGTERM');
    expect((await proc.exited).exitCode).toBe(0);
    proc = undefined;
    expect(bots(first.ts)).toHaveLength(1);
    expect(bots(second.ts)).toHaveLength(1);
    expect(await queuedJobs()).toBe(2);
  });

  it('LINE: one answer per message, killed before or after the record', async () => {
    const [linePort, healthPort] = [await freePort(), await freePort()];
    await writeFile(
      join(dir.path, 'config.yaml'),
      [
        'data_dir: ./data',
        'serve:\n  port: 0',
        'logging:\n  level: silent',
        'queue:\n  lease_seconds: 2',
        `router:\n  classifier:\n    enabled: false\n  chat:\n    host: ${ollama.url}`,
        `line:\n  enabled: true\n  port: ${linePort}\n  api_url: ${line.url}`,
        '',
      ].join('\n'),
    );
    const url = `http://127.0.0.1:${linePort}/line/webhook`;

    // Killed before the record: LINE got no 200 and redelivers to the restarted process.
    proc = await serve(healthPort);
    const first = line.textEvent({ text: 'what is a queue?' });
    await freeze(proc);
    const unanswered = line.deliver(url, [first]).then(
      (r) => r.status,
      () => 'no answer',
    );
    await waitFor(() => connected(linePort), { what: "the delivery in serve's socket" });
    await kill(proc);
    expect(await unanswered).toBe('no answer');
    expect(line.replies).toEqual([]);
    proc = await serve(healthPort);
    ollama.reply('A queue holds jobs until a worker takes them.');
    expect((await line.deliver(url, [first], { redelivery: true })).status).toBe(200);
    await waitFor(() => line.replies.length === 1, { what: 'the first answer' });

    // Killed after the record, while the local model is thinking about the answer.
    const second = line.textEvent({ text: 'and a lease?' });
    ollama.reply({ hang: true }, 'A lease is how long a claimed job is held.');
    expect((await line.deliver(url, [second])).status).toBe(200);
    await waitFor(() => ollama.requests.length === 2, { what: 'the second message at the model' });
    await kill(proc);
    expect(line.replies).toHaveLength(1);

    // LINE sends nothing again: the restarted process answers from the record, once.
    proc = await serve(healthPort);
    await waitFor(() => line.replies.length + line.pushes.length === 2, {
      what: 'the second answer',
    });
    proc.kill('SIGTERM');
    expect((await proc.exited).exitCode).toBe(0);
    proc = undefined;
    expect([...line.replies, ...line.pushes].map((r) => r.texts.join('\n'))).toEqual([
      expect.stringContaining('A queue holds jobs'),
      expect.stringContaining('A lease is how long'),
    ]);
  });
});
