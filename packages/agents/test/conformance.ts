/**
 * The agent conformance suite: every adapter runs the same real fixture processes in real
 * temporary git repositories and must keep the port's promises (headless, no forge token,
 * nothing survives a timeout, honest outcomes). Adapter test files call
 * `agentConformance(harness)`; the CLI adapters will run it with fixture executables.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  createTempDir,
  createTempRepo,
  gitTestEnv,
  isAlive,
  waitFor,
  withTimeoutsUntil,
  type TempRepo,
} from '@codefleet/testkit';
import { buildAgentEnv, type Agent, type AgentRunRequest, type RunFiles } from '../src/index.js';

/** Absolute path of `test/fixtures/<name>`. */
export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** How the suite reaches one adapter. */
export interface AgentHarness {
  name: string;
  /** An agent that runs `node test/fixtures/<script>` through the adapter. */
  agentFor(script: string, options?: { killGraceMs?: number }): Agent;
  /** The arguments the fixture must see after `node <script>` for this request. */
  expectedArgs(req: AgentRunRequest, files: RunFiles): string[];
}

/** Forge credentials planted in the source environment; none may reach an agent. */
export const plantedCredentials = {
  GITHUB_TOKEN: 'ghp_planted_in_source_env',
  GH_TOKEN: 'gho_planted',
  GIT_ASKPASS: '/usr/bin/askpass-planted',
  SSH_AUTH_SOCK: '/tmp/ssh-planted.sock',
  CODEFLEET_GITHUB_TOKEN: 'planted',
};

/** The environment tests run agents with: allowlisted from a source holding forge tokens. */
export function agentTestEnv(): Record<string, string> {
  return buildAgentEnv({ ...process.env, ...plantedCredentials }, { extra: gitTestEnv() });
}

/** Parses the `REPORT <json>` line of `report.mjs` from an output tail. */
export function parseReport(outputTail: string): {
  script: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdin: string;
} {
  const line = outputTail.split('\n').find((l) => l.startsWith('REPORT '));
  if (!line) throw new Error(`no REPORT line in output:\n${outputTail}`);
  return JSON.parse(line.slice('REPORT '.length)) as ReturnType<typeof parseReport>;
}

/** The run files the port promises for a request. */
export function runFilesOf(req: Pick<AgentRunRequest, 'workdir' | 'pass' | 'attempt'>): RunFiles {
  return {
    promptFile: join(req.workdir, '.codefleet', `prompt-${req.pass}-${req.attempt}.md`),
    feedbackFile: join(req.workdir, '.codefleet', `feedback-${req.pass}-${req.attempt}.md`),
  };
}

/** Task text that would run commands if anything handed it to a shell. */
export function hostilePrompt(marker: string): string {
  return `Fix it $(touch ${marker}) and \`touch ${marker}\`; rm -rf ~ ; echo "$HOME" > ${marker} | cat ${marker} && {workdir} $&\n`;
}

const pidsOf = (tail: string) => (/pids (\d+) (\d+)/.exec(tail) ?? []).slice(1).map(Number);

/** Registers the conformance tests for one adapter. */
export function agentConformance(harness: AgentHarness): void {
  const cleanups: (() => Promise<void>)[] = [];
  const repo = async (): Promise<TempRepo> => {
    const created = await createTempRepo({
      prefix: 'agents',
      files: { 'README.md': '# sample\n', 'src/app.js': 'export const answer = 42;\n' },
    });
    cleanups.push(() => created.dispose());
    return created;
  };
  const request = (workdir: string, overrides: Partial<AgentRunRequest> = {}): AgentRunRequest => ({
    workdir,
    prompt: 'Add a greeting to the README\n\nKeep it short.\n',
    pass: 'implement',
    attempt: 1,
    timeoutMs: 20_000,
    env: agentTestEnv(),
    ...overrides,
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  describe(`agent conformance: ${harness.name}`, () => {
    it('an agent that edits a file → changed, listing the file; the prompt file holds the prompt', async () => {
      const { path } = await repo();
      const req = request(path);
      const result = await harness.agentFor('edit-file.mjs').run(req);
      expect(result).toMatchObject({
        outcome: 'changed',
        exitCode: 0,
        signal: null,
        timedOut: false,
        changedFiles: ['NOTES.md'],
      });
      expect(result.detail).toBeUndefined();
      expect(result.durationMs).toBeGreaterThan(0);
      expect(result.outputTail).toContain('edited NOTES.md (implement attempt 1)');
      expect(await readFile(join(path, 'NOTES.md'), 'utf8')).toContain('task: Add a greeting to the README');
      expect(await readFile(runFilesOf(req).promptFile, 'utf8')).toBe(req.prompt);
    });

    it('passes the feedback of the previous attempt as a file', async () => {
      const { path } = await repo();
      const req = request(path, {
        pass: 'test',
        attempt: 2,
        feedback: 'FAIL test/app.test.js › greets\nexpected "hi"',
      });
      const result = await harness.agentFor('edit-file.mjs').run(req);
      expect(result.outcome).toBe('changed');
      const notes = await readFile(join(path, 'NOTES.md'), 'utf8');
      expect(notes).toContain('## test attempt 2');
      expect(notes).toContain('feedback: FAIL test/app.test.js › greets');
      expect(await readFile(runFilesOf(req).feedbackFile, 'utf8')).toBe(req.feedback);
    });

    it('an agent that exits 0 without changing anything → no_changes, not success', async () => {
      const { path } = await repo();
      const result = await harness.agentFor('do-nothing.mjs').run(request(path));
      expect(result).toMatchObject({ outcome: 'no_changes', exitCode: 0, changedFiles: [] });
      expect(result.detail).toMatch(/without changing/);
    });

    it('a non-zero exit → failed, keeping the exit code and the output tail', async () => {
      const { path } = await repo();
      const result = await harness.agentFor('fail.mjs').run(request(path));
      expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, timedOut: false, changedFiles: [] });
      expect(result.outputTail).toContain('fatal: the agent gave up');
      expect(result.detail).toBe('exited with code 2');
    });

    it('a hanging agent → timeout with exit code 124, and no process of its tree survives', async () => {
      const { path } = await repo();
      // What is asserted is that a tree with a grandchild is killed: a run stopped before the
      // fixture printed both pids (a loaded machine can start it that slowly) runs again with
      // a longer timeout.
      const agent = harness.agentFor('hang.mjs', { killGraceMs: 200 });
      const { result, timeoutMs } = await withTimeoutsUntil(
        [2_500, 15_000, 60_000],
        (timeoutMs) => agent.run(request(path, { timeoutMs })),
        (run) => pidsOf(run.outputTail).length === 2,
      );
      expect(result).toMatchObject({ outcome: 'timeout', exitCode: 124, timedOut: true });
      expect(result.detail).toContain(`timed out after ${timeoutMs / 1000} s`);
      const [parent, grandchild] = pidsOf(result.outputTail);
      expect(grandchild).toBeGreaterThan(0);
      await waitFor(() => !isAlive(parent!) && !isAlive(grandchild!), { what: 'no survivors' });
    });

    it('an abort stops the tree → error "cancelled"', async () => {
      const { path } = await repo();
      const controller = new AbortController();
      // Aborted once the tree is up (its pids printed), however long starting took.
      const onOutput = (chunk: string) => {
        if (chunk.includes('pids ')) controller.abort();
      };
      const result = await harness
        .agentFor('hang.mjs', { killGraceMs: 200 })
        .run(request(path, { signal: controller.signal, onOutput }));
      expect(result).toMatchObject({ outcome: 'error', detail: 'cancelled', timedOut: false });
      const [parent, grandchild] = pidsOf(result.outputTail);
      expect(grandchild).toBeGreaterThan(0);
      await waitFor(() => !isAlive(parent!) && !isAlive(grandchild!), { what: 'no survivors' });
    });

    it('runs headless in the workdir with exactly the request environment, minus forge credentials', async () => {
      const { path } = await repo();
      const req = request(path, { pass: 'test', attempt: 3 });
      const result = await harness.agentFor('report.mjs').run(req);
      const report = parseReport(result.outputTail);
      expect(report.script).toBe(fixture('report.mjs'));
      expect(report.args).toEqual(harness.expectedArgs(req, runFilesOf(req)));
      expect(report.cwd).toBe(await realpath(path));
      expect(report.stdin).toBe('');
      // Plus the run's mark, by which what leaves the process group is found and killed.
      expect(report.env).toEqual({ ...req.env, CODEFLEET_RUN_MARK: expect.stringMatching(/^[0-9a-f]{24}$/) });
      for (const name of Object.keys(plantedCredentials)) expect(report.env).not.toHaveProperty(name);
      expect(JSON.stringify(report)).not.toContain('planted');
    });

    it('strips forge credentials even when the caller put them in req.env', async () => {
      const { path } = await repo();
      const req = request(path, { env: { ...agentTestEnv(), ...plantedCredentials, GIT_CREDENTIAL_HELPER: 'store' } });
      const report = parseReport((await harness.agentFor('report.mjs').run(req)).outputTail);
      expect(JSON.stringify(report.env)).not.toContain('planted');
      expect(report.env).not.toHaveProperty('GIT_CREDENTIAL_HELPER');
      expect(report.env).toHaveProperty('PATH');
    });

    it('task text with shell syntax never executes and reaches the agent verbatim', async () => {
      const { path } = await repo();
      const markerDir = await createTempDir('marker');
      cleanups.push(() => markerDir.dispose());
      const marker = join(markerDir.path, `pwned-${randomUUID()}`);
      const req = request(path, { prompt: hostilePrompt(marker), feedback: hostilePrompt(marker) });
      const result = await harness.agentFor('report.mjs').run(req);
      expect(result.outcome).toBe('no_changes');
      expect(existsSync(marker)).toBe(false);
      expect(await readFile(runFilesOf(req).promptFile, 'utf8')).toBe(req.prompt);
      expect(await readFile(runFilesOf(req).feedbackFile, 'utf8')).toBe(req.feedback);
    });

    it('an agent that commits anyway: the committed files still count as changed', async () => {
      const { path } = await repo();
      const result = await harness.agentFor('commit.mjs').run(request(path));
      expect(result).toMatchObject({ outcome: 'changed', exitCode: 0, changedFiles: ['committed.txt'] });
    });

    it('refuses to run outside a git work tree', async () => {
      const dir = await createTempDir('not-a-repo');
      cleanups.push(() => dir.dispose());
      await expect(harness.agentFor('edit-file.mjs').run(request(dir.path))).rejects.toMatchObject({
        code: 'git_failed',
      });
      expect(existsSync(join(dir.path, 'NOTES.md'))).toBe(false);
    });
  });
}
