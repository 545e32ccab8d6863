import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildAgentEnv, createScriptAgent } from '@codefleet/agents';
import { parseConfig } from '@codefleet/config';
import { createJob, type Job, type RunRecord } from '@codefleet/core';
import { createLocalForge, type LocalForge } from '@codefleet/forge';
import { createIssueRequester, type ProgressLabels } from '@codefleet/github';
import { silentLogger } from '@codefleet/log';
import { LocalQueue, settleLease } from '@codefleet/queue';
import { SqliteRunStore } from '@codefleet/store';
import { createTempDir, createTempRepo, git, gitTestEnv, type TempDir } from '@codefleet/testkit';
import { openSandbox, type Sandbox, type SandboxSettings } from '@codefleet/sandbox';
import { createWorkspaceManager } from '@codefleet/workspace';
import { runJob, type PipelineDeps, type PipelineSettings } from '../src/index.js';
import { renderTaskNote } from '../src/task-note.js';

/**
 * A small Node project whose build loads every module and whose tests use node:test. Its
 * checks are the harness's configured commands, `node build.mjs` and `node run-tests.mjs`
 * (every test file in one process): the suite is CPU-bound, and npm's start (about a fifth
 * of a second of CPU, five times a job) and `node --test`'s process per test file were a
 * third of a job's CPU. {@link npmProjectFiles} is the same project with npm scripts and
 * `node --test`, the way a real repository is checked (its tests, and the verify
 * package's, cover that path).
 */
export const projectFiles: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'sample', private: true, type: 'module' }, null, 2),
  'build.mjs':
    "import { readdirSync } from 'node:fs';\nfor (const f of readdirSync('src')) if (f.endsWith('.js')) await import(`./src/${f}`);\n",
  'run-tests.mjs':
    "import { readdirSync } from 'node:fs';\nfor (const f of readdirSync('test').sort()) if (f.endsWith('.test.js')) await import(`./test/${f}`);\n",
  'src/lib.js': 'export const one = () => 1;\n',
  'test/lib.test.js':
    "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { one } from '../src/lib.js';\ntest('one', () => assert.equal(one(), 1));\n",
  'secrets/prod.env': 'API_KEY=do-not-ship\n',
  'vendor/locked.js': 'export const locked = true;\n',
};

/** {@link projectFiles} with `build` and `test` scripts: checked through npm, as the config's defaults do. */
export const npmProjectFiles: Record<string, string> = {
  ...projectFiles,
  'package.json': JSON.stringify(
    { name: 'sample', private: true, type: 'module', scripts: { build: 'node build.mjs', test: 'node --test' } },
    null,
    2,
  ),
};

/**
 * The verification commands for {@link projectFiles}, which has no scripts; a test's own
 * files are checked by the config's defaults, as a real repository is.
 */
const harnessConfig = `
verification:
  toolchains:
    node: { build: [node, build.mjs], test: [node, run-tests.mjs] }
`;

/** A scripted agent body that adds two() in pass 1 and its test in pass 2. */
export const implementsFeature = `
const lib = path.join(workdir, 'src', 'lib.js');
if (pass === 'implement') fs.appendFileSync(lib, 'export const two = () => 2;\\n');
if (pass === 'test') fs.writeFileSync(path.join(workdir, 'test', 'two.test.js'),
  "import { test } from 'node:test';\\nimport assert from 'node:assert/strict';\\nimport { two } from '../src/lib.js';\\ntest('two', () => assert.equal(two(), 2));\\n");
`;

/**
 * What the CLI adds to every run's environment (`runEnvironment`): a sandboxed run's HOME is
 * empty, so without them each npm call would look for a newer npm over the network first.
 */
const quietTools = { npm_config_update_notifier: 'false', NO_UPDATE_NOTIFIER: '1' };

/** What the work branch holds, file by file, on the origin the PR was pushed to. */
export async function pushed(harness: Harness, branch: string): Promise<{ files: string[]; text: string }> {
  const files = (await git(harness.origin, ['ls-tree', '-r', '--name-only', branch])).trim().split('\n');
  const text = await git(harness.origin, ['log', '-p', '--format=%H %s', `main..${branch}`]);
  return { files, text };
}

/**
 * A run's outcome, for `expect(outcomeOf(run)).toBe('succeeded')`: a run that did not
 * succeed comes as its task note (error, agent runs, checks, and the failing ones' output),
 * so a failure on a CI machine says why rather than only that.
 */
export function outcomeOf(run: RunRecord | undefined): string {
  if (run === undefined) return 'no run recorded';
  return run.outcome === 'succeeded' ? run.outcome : renderTaskNote(run, { maxChars: 12_000 });
}

/** Everything a pipeline test needs, on real parts: git repos, SQLite queue/stores, processes. */
export interface Harness {
  dir: TempDir;
  origin: string;
  queue: LocalQueue;
  store: SqliteRunStore;
  forge: LocalForge;
  deps: PipelineDeps;
  /**
   * Writes the scripted agent for this test: a module body receiving `args` (Map of CLI flags), `fs`, `path`.
   * `name` writes another one beside it (`<name>.mjs`, see {@link agentModule}), e.g. one per escalation tier.
   */
  agent(body: string, name?: string): Promise<void>;
  /** Where the scripted agent `name` lives (default: the one `agentFor` runs). */
  agentModule(name?: string): string;
  job(overrides?: Partial<Job>): Job;
  /** Enqueues the jobs and runs a worker until the queue is empty. */
  drain(...jobs: Job[]): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * Builds a harness; `settings` overrides pipeline settings, `files` the repository's (default
 * {@link projectFiles}); `gitConfig` is a global git config the worker's git reads, as an
 * operator's would (git-lfs installs its filter there).
 */
export async function createHarness(
  options: Partial<PipelineSettings> & { labels?: ProgressLabels; gitConfig?: string } = {},
  files: Record<string, string> = projectFiles,
): Promise<Harness> {
  const { labels, gitConfig, ...settings } = options;
  const dir = await createTempDir('pipeline');
  const seed = await createTempRepo({ files });
  const origin = join(dir.path, 'origin.git');
  await git(dir.path, ['clone', '--quiet', '--bare', seed.path, origin]);
  await seed.dispose();
  const globalConfig = join(dir.path, 'gitconfig');
  if (gitConfig !== undefined) await writeFile(globalConfig, gitConfig);
  const env = {
    ...gitTestEnv(),
    PATH: process.env.PATH ?? '',
    HOME: dir.path,
    ...(gitConfig === undefined ? {} : { GIT_CONFIG_GLOBAL: globalConfig }),
  };
  // The scripted agent lives in a directory of its own, which the test sandbox lets it write
  // (its run counter): test bookkeeping, not something a real job's sandbox allows.
  const agentDir = join(dir.path, 'agent');
  await mkdir(agentDir);
  const agentModule = join(agentDir, 'agent.mjs');
  const { config } = parseConfig(files === projectFiles ? harnessConfig : '', {
    env: {},
    baseDir: dir.path,
    hostname: 'test-host',
  });
  const queue = new LocalQueue({
    backend: 'local',
    path: join(dir.path, 'queue.sqlite'),
    name: 'test',
    leaseMs: 30_000,
    maxAttempts: 3,
    pollMs: 20,
  });
  const store = new SqliteRunStore(join(dir.path, 'runs.sqlite'));
  const forge = createLocalForge({ dbPath: join(dir.path, 'forge.sqlite'), gitEnv: env });
  const sandbox = await testSandbox(dir.path, [agentDir]);
  const deps: PipelineDeps = {
    sandbox,
    workspaces: createWorkspaceManager({ cacheDir: join(dir.path, 'cache'), reuse: true, gitEnv: env }),
    forge,
    // Issue jobs report on the issue, CLI jobs on the local forge's task (as the CLI wires it).
    requester: createIssueRequester({
      issues: forge,
      tasks: true,
      ...(labels === undefined ? {} : { labels }),
      ...(settings.secrets === undefined ? {} : { secrets: settings.secrets }),
    }),
    store,
    log: silentLogger(),
    agentFor: () => createScriptAgent({ module: agentModule }),
    random: () => 0.5,
    settings: {
      defaultAgent: 'script',
      // Hang-catchers, not speed limits: on CI's loaded machine an agent run past 20 s timed
      // out, and the transient retry started the scripted attempts over. A test of a timeout
      // sets its own.
      agentTimeoutMs: 300_000,
      maxFixAttempts: 3,
      maxAttempts: 3,
      outer: { maxRetries: 2, backoff: { strategy: 'fixed', delayMs: 50 } },
      verification: config.verification,
      stepTimeoutMs: 300_000,
      onDodFailure: 'draft',
      agentEnv: () => buildAgentEnv(env, { extra: quietTools }),
      verifyEnv: buildAgentEnv(env, { extra: quietTools }),
      commitAuthor: { name: 'codefleet', email: 'codefleet@test.invalid' },
      keepFailed: false,
      ...settings,
    },
  };
  let n = 0;
  return {
    dir,
    origin,
    queue,
    store,
    forge,
    deps,
    agentModule: (name) => (name === undefined ? agentModule : join(agentDir, `${name}.mjs`)),
    agent: (body, name) =>
      writeFile(
        name === undefined ? agentModule : join(agentDir, `${name}.mjs`),
        [
          "import fs from 'node:fs';",
          "import path from 'node:path';",
          'const args = new Map();',
          'for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i], process.argv[i + 1]);',
          "const workdir = args.get('--workdir');",
          "const pass = args.get('--pass');",
          "const attempt = Number(args.get('--attempt'));",
          "const feedback = args.get('--feedback-file') ? fs.readFileSync(args.get('--feedback-file'), 'utf8') : '';",
          "const counterFile = path.join(path.dirname(new URL(import.meta.url).pathname), 'runs.count');",
          "const runs = (fs.existsSync(counterFile) ? Number(fs.readFileSync(counterFile, 'utf8')) : 0) + 1;",
          'fs.writeFileSync(counterFile, String(runs));',
          body,
        ].join('\n'),
      ),
    job: (overrides = {}) => {
      n += 1;
      return createJob(
        {
          repo: origin,
          source: { kind: 'cli' },
          title: `task ${n}`,
          body: 'Do the thing.',
          requested_by: 'test',
          ...overrides,
        },
        { id: `job-${n}-${Date.now()}`, now: new Date() },
      );
    },
    drain: async (...jobs) => {
      for (const job of jobs) await queue.enqueue(job);
      // The worker's loop without its heartbeats and slots (packages/worker tests those): claim,
      // run, settle, until nothing is ready or delayed.
      for (;;) {
        const lease = await queue.claim({ workerId: 'test-worker', waitMs: 200 });
        if (!lease) {
          if ((await queue.stats()).depth === 0) return;
          continue;
        }
        const result = await runJob(deps, {
          job: lease.job,
          attempt: lease.attempt,
          workerId: 'test-worker',
          signal: new AbortController().signal,
        });
        await settleLease(lease, result);
      }
    },
    dispose: async () => {
      await queue.close();
      await store.close();
      await forge.close();
      await dir.dispose();
    },
  };
}

/**
 * The sandbox pipeline tests run in: the real one of this host (bubblewrap on Linux), with
 * the data directory hidden, plus `writable` directories for test bookkeeping.
 * `CODEFLEET_TEST_SANDBOX_LAYOUT=no-remap` lays runs out as Seatbelt must (macOS cannot show
 * a path elsewhere): every mount at its own path, refused otherwise, as sandbox-exec does.
 */
export async function testSandbox(
  dataDir: string,
  writable: readonly string[] = [],
  more: Partial<Pick<SandboxSettings, 'limits' | 'network'>> = {},
): Promise<Sandbox> {
  const base = await openSandbox(
    {
      mode: process.env.CODEFLEET_TEST_SANDBOX === 'none' ? 'none' : 'auto',
      network: more.network ?? { mode: 'public', allow: [] },
      readPaths: [],
      hiddenPaths: [dataDir],
      runRoot: join(dataDir, 'sandbox'),
      ...(more.limits === undefined ? {} : { limits: more.limits }),
    },
    { platform: process.platform, path: process.env.PATH ?? '' },
  );
  const remapsPaths = base.remapsPaths && process.env.CODEFLEET_TEST_SANDBOX_LAYOUT !== 'no-remap';
  return {
    mode: base.mode,
    remapsPaths,
    description: base.description,
    run: (argv, options) => {
      const moved = (options.mounts ?? []).find((mount) => mount.source !== mount.target);
      if (!remapsPaths && moved) throw new TypeError(`test sandbox: cannot show ${moved.source} at ${moved.target}`);
      return base.run(argv, { ...options, writable: [...options.writable, ...writable] });
    },
  };
}
