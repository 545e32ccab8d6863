import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { displayHost, probeOllama } from '@codefleet/agents';
import type { LoadedConfig } from '@codefleet/config';
import type { PullRequest } from '@codefleet/forge';
import { createLogger } from '@codefleet/log';
import { runProcess } from '@codefleet/process';
import { branchName } from '@codefleet/workspace';
import { createSampleRepo } from '../demo/sample-repo.js';
import { formatRun } from '../format.js';
import { gitEnvFrom, openRuntime } from '../runtime.js';
import { enqueue } from './jobs.js';
import { work } from './worker.js';

const demoAgent = fileURLToPath(new URL('../demo/demo-agent.js', import.meta.url));

/** Which agent the demo runs, and the sentence that says why. */
async function chooseAgent(loaded: LoadedConfig): Promise<{ agent: 'ollama' | 'script'; why: string }> {
  const { ollama } = loaded.config.agents;
  if (ollama.provider !== 'ollama' || ollama.host === undefined) {
    return { agent: 'script', why: 'agents.ollama uses an OpenAI-compatible endpoint, which the demo does not call' };
  }
  const probe = await probeOllama({ host: ollama.host, model: ollama.model, timeoutMs: 1_500 });
  if (probe.status === 'ready')
    return { agent: 'ollama', why: `Ollama ${probe.version} at ${displayHost(ollama.host)} has ${ollama.model}` };
  if (probe.status === 'model_missing') {
    return {
      agent: 'script',
      why: `Ollama at ${displayHost(ollama.host)} answered but has no ${ollama.model} (ollama pull ${ollama.model} to use it)`,
    };
  }
  return {
    agent: 'script',
    why: `no Ollama answered at ${displayHost(ollama.host)} ($OLLAMA_HOST or agents.ollama.host)`,
  };
}

/**
 * `codefleet demo`: the whole product on embedded defaults with nothing else running — a
 * sample repository, a task on the local queue, a worker running the two-pass loop, a
 * pull request on the local forge. The agent is the built-in one when a local Ollama
 * answers and has the configured model, else the scripted demo agent; the first line says
 * which. Resolves true only when the PR was opened with the definition of done passed.
 */
export async function demo(loaded: LoadedConfig, out: (line: string) => void): Promise<boolean> {
  const dir = join(loaded.config.data_dir, 'demo', new Date().toISOString().replace(/[:.]/g, '-'));
  await mkdir(dir, { recursive: true });
  const chosen = await chooseAgent(loaded);
  const config = demoRunConfig(loaded, dir, chosen.agent);
  const rt = await openRuntime(
    { ...loaded, config },
    {
      log: createLogger({ level: 'warn', format: 'pretty', secrets: loaded.secrets, destination: process.stderr }),
    },
  );
  try {
    out(
      chosen.agent === 'ollama'
        ? `codefleet demo — everything runs locally; the agent is the BUILT-IN agent on a local model (${chosen.why}).`
        : `codefleet demo — everything runs locally; the agent is SCRIPTED (no language model): ${chosen.why}.`,
    );
    out(`  working in ${dir}`);
    const origin = await createSampleRepo(dir, gitEnvFrom(loaded.env));
    out(`  sample repository: ${origin} (a small JavaScript project with its own build and tests)`);

    const queued = await enqueue(rt, {
      repo: origin,
      title: 'Add a multiply(a, b) function to the calculator',
      body: [
        'The calculator can add and subtract; it should multiply too.',
        '',
        '- [ ] `multiply(a, b)` is exported from `src/calc.js`',
        '- [ ] it handles negative numbers',
        '- [ ] it is covered by tests',
      ].join('\n'),
      dod: [['npm', 'test']],
      requestedBy: 'demo',
    });
    out(`  enqueued job ${queued.id} on the local queue (${join(dir, 'queue.sqlite')})`);
    out('');
    await work(rt, { concurrency: 1, once: true, progress: true });

    const run = await rt.store.get(queued.id);
    if (!run) {
      out('the worker did not record a run: see the log lines above');
      return false;
    }
    out('');
    out(formatRun(run));
    const branch = branchName(run.job);
    const pr = await (await rt.forge()).findPullRequest(origin, branch);
    out('');
    await showPullRequest(pr, branch, origin, dir, loaded, out);
    out('');
    await showWhereThingsAre(dir, origin, run.run_id, chosen.agent, loaded, out);
    const ok = run.outcome === 'succeeded' && run.dod_result === 'passed' && pr !== undefined && !pr.draft;
    out('');
    out(
      ok
        ? 'demo passed: pull request opened with the definition of done passed.'
        : `demo FAILED: outcome ${run.outcome ?? run.stage}, DoD ${run.dod_result ?? 'not run'}.`,
    );
    return ok;
  } finally {
    await rt.close();
  }
}

/** The loaded config with everything local and in `dir`, and `agent` as the default agent. */
function demoRunConfig(loaded: LoadedConfig, dir: string, agent: 'ollama' | 'script'): LoadedConfig['config'] {
  return {
    ...loaded.config,
    data_dir: dir,
    queue: { ...loaded.config.queue, backend: 'local' as const, local: { path: join(dir, 'queue.sqlite') } },
    // Everything local, the runs too: a demo run does not belong in a fleet's store.
    store: { ...loaded.config.store, backend: 'sqlite' as const },
    workspace: { ...loaded.config.workspace, cache_dir: join(dir, 'cache') },
    agents: {
      ...loaded.config.agents,
      default: agent,
      script: { ...loaded.config.agents.script, module: demoAgent },
    },
    forge: { ...loaded.config.forge, type: 'local' as const },
    logging: { ...loaded.config.logging, level: 'warn' as const },
  };
}

/** The pull request the demo's run opened on the local forge, with its diff's stat; or that there is none. */
async function showPullRequest(
  pr: PullRequest | undefined,
  branch: string,
  origin: string,
  dir: string,
  loaded: LoadedConfig,
  out: (line: string) => void,
): Promise<void> {
  if (pr) {
    out(`Pull request #${pr.number} on the local forge: ${pr.title}${pr.draft ? ' (draft)' : ''}`);
    out(`  ${branch} → ${pr.base} · ${pr.url}`);
    const diff = await runProcess(['git', '--git-dir', origin, 'diff', '--stat', `${pr.base}...${branch}`], {
      cwd: dir,
      env: gitEnvFrom(loaded.env),
      timeoutMs: 30_000,
    });
    out(diff.outputTail.replace(/^/gm, '  ').trimEnd());
  } else {
    out('No pull request was opened.');
  }
}

/** Where the demo's repository, records and config are, the commands that read them, and the agent's caveat. */
async function showWhereThingsAre(
  dir: string,
  origin: string,
  runId: string,
  agent: 'ollama' | 'script',
  loaded: LoadedConfig,
  out: (line: string) => void,
): Promise<void> {
  const demoConfig = await writeDemoConfig(dir);
  out('Where things are:');
  out(`  origin repository (push target): ${origin}`);
  out(`  run records:   ${join(dir, 'runs.sqlite')}`);
  out(`  PR records:    ${join(dir, 'forge.sqlite')}`);
  out(`  working copies: ${join(dir, 'cache')}`);
  out(`  its config:    ${demoConfig}`);
  out('Read them (from the repository root):');
  out(`  npx codefleet --config ${shellWord(demoConfig)} show ${shellWord(runId)}`);
  out(`  npx codefleet --config ${shellWord(demoConfig)} runs`);
  out('');
  if (agent === 'script') {
    out('The demo agent is scripted: it is not a language model. Start Ollama with the model');
    out(`(ollama pull ${loaded.config.agents.ollama.model}) to see the built-in agent here, or set \`agents.default\``);
    out('in config.yaml to ollama, aider, claude, codex, gemini or command (see the agents');
    out('section there for binaries, models and API key variables).');
  } else {
    out('The agent was the built-in one on your local model: a small model may need the inner');
    out('fix loop, or fail the task; the run record above says what happened.');
  }
}

/**
 * Writes the config the demo ran with into its directory, so the commands it prints read
 * this demo's queue, runs and pull requests. Literal values only: no `${VAR}` for the
 * environment to change.
 */
async function writeDemoConfig(dir: string): Promise<string> {
  const path = join(dir, 'config.yaml');
  await writeFile(
    path,
    [
      '# Written by `codefleet demo`: the queue, run store, working copies and forge of this demo.',
      `data_dir: ${yamlString(dir)}`,
      `queue:\n  backend: local\n  local:\n    path: ${yamlString(join(dir, 'queue.sqlite'))}`,
      'store:\n  backend: sqlite',
      `workspace:\n  cache_dir: ${yamlString(join(dir, 'cache'))}`,
      'forge:\n  type: local',
      '',
    ].join('\n'),
  );
  return path;
}

/** `value` as one POSIX shell word: as it is when that is safe, else single-quoted. */
function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

/** `value` as a YAML string the config loader reads back as it is (`${` would be expanded). */
function yamlString(value: string): string {
  return JSON.stringify(value).replaceAll('${', () => '$${');
}
