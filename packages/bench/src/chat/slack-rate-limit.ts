/**
 * `npm run bench` (chat): what a busy Slack workspace costs a job. A mention in a thread of
 * the Slack STAND-IN (Web API and Socket Mode on loopback, Slack's documented 429 with
 * Retry-After) reaches the real `codefleet serve`, and the real `codefleet worker --once` runs
 * the job (scripted agent, real git, the sandbox, the local forge) and reports to the thread.
 * The same job is run against a healthy Slack and against one that answers every
 * `chat.update` with 429 and Retry-After 5, as a workspace at ~50 edits a minute does.
 * Reporting never blocks work: the job's wall time (its run record's duration)
 * stays within 1.3× of the healthy run's. Also counts the Web API calls one mention costs
 * (target ≤ 12). Rounds alternate healthy and limited, so machine load falls on both alike.
 * Prints its figures; asserts nothing.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTempRepo, gitTestEnv, startSlackStandIn, waitFor, type SlackStandIn } from '@codefleet/testkit';
import { codefleetBin, runToExit, startCodefleet } from '../codefleet-process.js';
import { median } from '../stats.js';

const rounds = 3;
const retryAfterSeconds = 5;

/** One job's figures: the run's wall time and the Web API calls of its mention. */
interface JobFigures {
  wallMs: number;
  calls: number;
  methods: string[];
}

/** Runs one mention → PR job against a fresh stand-in, rate-limited or not. */
async function oneJob(limited: boolean): Promise<JobFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'codefleet-bench-slack-'));
  const repo = await createTempRepo({ files: { 'notes.txt': 'hello\n' } });
  const slack = await startSlackStandIn();
  try {
    if (limited) slack.rateLimit('chat.update', retryAfterSeconds);
    const config = await writeSetup(dir, repo.path, slack);
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      ...gitTestEnv(),
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
    };
    const serve = startCodefleet(['serve'], { config, env, dir, name: 'serve' });
    try {
      await waitFor(() => slack.socket.connections === 1, { what: 'serve to connect to Socket Mode' });
      // The mention's calls: serve's own at startup (auth.test) are not.
      const before = slack.calls.length;
      const { ts, body } = slack.mention({
        channel: 'C0REPO',
        user: 'U0ALICE',
        text: `<@${slack.botUserId}> /code append a line to notes.txt`,
      });
      await slack.socket.deliverEvent(body);
      await waitFor(() => slack.thread('C0REPO', ts).some((m) => m.bot_id !== undefined), {
        what: 'the job to be queued',
      });
      await runToExit([process.execPath, codefleetBin, '--config', config, 'worker', '--once'], dir, env);
      const wallMs = await runWallMs(config, dir, env);
      const methods = slack.calls.slice(before).map((call) => call.method);
      return { wallMs, calls: methods.length, methods };
    } finally {
      await serve.stop();
    }
  } finally {
    await slack.close();
    await repo.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

async function writeSetup(dir: string, repoPath: string, slack: SlackStandIn): Promise<string> {
  await mkdir(join(dir, 'agent'));
  const agent = join(dir, 'agent', 'agent.mjs');
  await writeFile(
    agent,
    "import fs from 'node:fs';\nconst w = process.argv[process.argv.indexOf('--workdir') + 1];\nfs.appendFileSync(w + '/notes.txt', 'a line from slack\\n');\n",
  );
  const config = join(dir, 'config.yaml');
  await writeFile(
    config,
    [
      'data_dir: ./data',
      'serve:\n  port: 0',
      'logging:\n  level: silent',
      'agents:\n  default: script\n  script:',
      `    module: ${agent}`,
      'router:\n  classifier:\n    enabled: false',
      'slack:\n  enabled: true',
      `  api_url: ${slack.apiUrl}`,
      '  allowed_users: [U0ALICE]',
      '  channels:',
      `    C0REPO: { repo: ${JSON.stringify(repoPath)} }`,
      '',
    ].join('\n'),
  );
  return config;
}

/** The job's wall time by its run record (`runs --json` duration). */
async function runWallMs(config: string, dir: string, env: Record<string, string>): Promise<number> {
  const runs = JSON.parse(
    (await runToExit([process.execPath, codefleetBin, '--config', config, 'runs', '--json'], dir, env)).stdout,
  ) as {
    outcome?: string;
    duration_ms?: number;
  }[];
  const run = runs[0];
  if (run?.outcome !== 'succeeded' || run.duration_ms === undefined)
    throw new Error(`the job did not succeed: ${JSON.stringify(run)}`);
  return run.duration_ms;
}

async function main(): Promise<void> {
  const healthy: JobFigures[] = [];
  const limited: JobFigures[] = [];
  for (let round = 0; round < rounds; round += 1) {
    healthy.push(await oneJob(false));
    limited.push(await oneJob(true));
  }
  const wall = (figures: JobFigures[]) => median(figures.map((f) => f.wallMs));
  const ratio = wall(limited) / wall(healthy);
  const calls = Math.max(...healthy.map((f) => f.calls));
  console.log(`chat: Slack mention → PR, ${rounds} rounds each (median job wall time, the run's own clock)`);
  console.log(`  healthy Slack:                         ${(wall(healthy) / 1000).toFixed(2)} s`);
  console.log(
    `  429 + Retry-After ${retryAfterSeconds} on every chat.update: ${(wall(limited) / 1000).toFixed(2)} s  (${ratio.toFixed(2)}×, target ≤ 1.3×) ${ratio <= 1.3 ? 'met' : 'NOT MET'}`,
  );
  console.log(
    `  Web API calls per mention: ${calls} (target ≤ 12) ${calls <= 12 ? 'met' : 'NOT MET'}: ${healthy[0]?.methods.join(', ') ?? ''}`,
  );
}

await main();
