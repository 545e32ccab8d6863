import { lstat, open, realpath } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { captureProcess } from '@codefleet/process';
import { defaultProtected, isProtected, resolveInside } from '@codefleet/patch';
import { agentGitOptions, runFilesDir } from '../changed-files.js';
import type { AgentRunRequest } from '../port.js';
import type { ChatMessage } from './chat-model.js';

/** What the prompt is built from. */
export interface PromptInput extends Pick<AgentRunRequest, 'workdir' | 'prompt' | 'pass' | 'feedback'> {
  /** The agent's environment, for git. */
  env: Readonly<Record<string, string>>;
  /** The git binary the worker resolved at start; default `git`. */
  gitPath?: string | undefined;
  /** Files changed so far in this job: shown first, the model must see its own earlier edits. */
  changed: readonly string[];
  /** Upper bound on the characters of file contents in the prompt (the bounded context). */
  contextChars: number;
}

/** The messages of the first ask, and which files went in. */
export interface BuiltPrompt {
  messages: ChatMessage[];
  /** Files whose content is in the prompt, in prompt order. */
  included: string[];
  /** Files left out because the context bound was reached (or they were too large). */
  omitted: string[];
}

/** The task file the pipeline writes; read when present, bounded. */
const taskFileName = `${runFilesDir}/task.md`;
const maxTaskChars = 8_000;
const maxTreeEntries = 300;
const maxFeedbackChars = 6_000;
/** Files every ecosystem generates and no model needs to read. */
const noise = new Set([
  'package-lock.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'Cargo.lock',
  'go.sum',
  'poetry.lock',
  'Gemfile.lock',
  'composer.lock',
  'uv.lock',
]);

/** The instructions every ask starts with: the reply format the patch engine reads. */
export const systemPrompt = [
  'You are a careful software engineer working in a git repository. You cannot run commands:',
  'you change the repository only by writing files, and the worker builds and tests your change.',
  '',
  'Answer in two parts.',
  '1. Plan: a few short lines saying what you will change and why.',
  '2. Patch: for every file you create or change, one fenced code block whose info string is the',
  '   language, a colon and the file path relative to the repository root, holding the COMPLETE',
  '   new content of that file. For example:',
  '',
  '```js:src/example.js',
  'export const example = () => 1;',
  '```',
  '',
  'Rules: write whole files, never fragments or "..." placeholders; use the exact paths from the',
  'file list; shell blocks are not run, so do not write any; change only what the task needs;',
  'write nothing after the last block.',
].join('\n');

/** The message that asks again after a reply the patch engine could not use. */
export function reaskMessage(problem: string): string {
  return [
    `Your reply could not be used: ${problem}`,
    '',
    'Answer again: a short plan, then one ```lang:path block per file with its complete new content.',
  ].join('\n');
}

/**
 * Builds the first ask of a run: the run's prompt (task, criteria, pass,
 * feedback), `.codefleet/task.md`, the repository's file list, and the contents of the
 * most relevant files within `contextChars`: files changed so far in this job first, then
 * files the task or feedback names, then the rest in path order. Only regular files git
 * lists (tracked or untracked, not ignored) are read: no symlinks, no `.git`, no protected
 * files (`.env*`, keys, credentials), no binaries, nothing under `.codefleet/`, so nothing
 * outside the working copy and no secret of the repository reaches the model.
 */
export async function buildPrompt(input: PromptInput): Promise<BuiltPrompt> {
  const root = await realpath(input.workdir);
  const listed = await listFiles(root, input.env, input.gitPath);
  const task = await readBounded(root, taskFileName, maxTaskChars);
  const mentioned = `${input.prompt}\n${input.feedback ?? ''}\n${task ?? ''}`;
  const order = relevanceOrder(listed, input.changed, mentioned);

  const included: string[] = [];
  const omitted: string[] = [];
  const blocks: string[] = [];
  let used = 0;
  for (const path of order) {
    const left = input.contextChars - used;
    const content = left > 0 ? await readBounded(root, path, left) : undefined;
    if (content === undefined) {
      omitted.push(path);
      continue;
    }
    const block = fileBlock(path, content);
    used += content.length;
    blocks.push(block);
    included.push(path);
  }

  const tree =
    listed.slice(0, maxTreeEntries).join('\n') +
    (listed.length > maxTreeEntries ? `\n… and ${listed.length - maxTreeEntries} more` : '');
  const feedback =
    input.feedback && !input.prompt.includes(input.feedback)
      ? ['', 'Your previous attempt failed. Fix the problems below:', '', input.feedback.slice(-maxFeedbackChars)]
      : [];
  const user = [
    input.prompt.trim(),
    ...feedback,
    ...(task === undefined ? [] : ['', `## ${taskFileName}`, '', task.trim()]),
    '',
    `## Repository files (${listed.length})`,
    '',
    tree || '(none)',
    '',
    `## File contents (${included.length} of ${listed.length}${omitted.length > 0 ? `; left out for length: ${omitted.slice(0, 30).join(', ')}${omitted.length > 30 ? ', …' : ''}` : ''})`,
    '',
    ...blocks,
    input.pass === 'test' ? 'Now write the plan and the patch for the tests.' : 'Now write the plan and the patch.',
  ].join('\n');
  return {
    messages: [
      { role: 'system', content: systemPrompt },
      { role: 'user', content: user },
    ],
    included,
    omitted,
  };
}

/** Files to show, most relevant first (see {@link buildPrompt}); pure, for tests. */
export function relevanceOrder(files: readonly string[], changed: readonly string[], text: string): string[] {
  const known = new Set(files);
  const first = changed.filter((f) => known.has(f));
  const named = files.filter((f) => !first.includes(f) && mentions(text, f));
  const rest = files.filter((f) => !first.includes(f) && !named.includes(f));
  return [...first, ...named, ...rest];
}

/** True when `text` names `path` in full, or its file name as a word (`calc.js`). */
function mentions(text: string, path: string): boolean {
  if (text.includes(path)) return true;
  const name = basename(path);
  if (!name.includes('.')) return false;
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w.-])${escaped}($|[^\\w-])`).test(text);
}

/** One file for the prompt, fenced with more backticks than the content holds. */
function fileBlock(path: string, content: string): string {
  const longest = Math.max(0, ...[...content.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  const body = content.endsWith('\n') ? content : `${content}\n`;
  return `File: ${path}\n${fence}${languageOf(path)}\n${body}${fence}\n`;
}

const languages: Record<string, string> = {
  '.js': 'js',
  '.mjs': 'js',
  '.cjs': 'js',
  '.ts': 'ts',
  '.tsx': 'tsx',
  '.jsx': 'jsx',
  '.py': 'python',
  '.go': 'go',
  '.rs': 'rust',
  '.java': 'java',
  '.rb': 'ruby',
  '.json': 'json',
  '.md': 'markdown',
  '.yml': 'yaml',
  '.yaml': 'yaml',
  '.sh': 'sh',
  '.toml': 'toml',
  '.c': 'c',
  '.h': 'c',
  '.cpp': 'cpp',
  '.cs': 'csharp',
  '.php': 'php',
  '.kt': 'kotlin',
  '.swift': 'swift',
  '.css': 'css',
  '.html': 'html',
};

/** The Markdown language of a path, for the fences (empty when unknown). */
function languageOf(path: string): string {
  return languages[extname(path).toLowerCase()] ?? '';
}

/**
 * Tracked and untracked, not ignored, files git lists; minus run files, protected files and
 * lockfiles, and minus what the scope excludes: sparse checkout marks those `S`
 * (skip-worktree), and not even their names may reach a model.
 */
async function listFiles(workdir: string, env: Readonly<Record<string, string>>, gitPath = 'git'): Promise<string[]> {
  const result = await captureProcess(
    [gitPath, ...agentGitOptions, 'ls-files', '-z', '-t', '--cached', '--others', '--exclude-standard'],
    { cwd: workdir, env },
  );
  if (result.exitCode !== 0) return [];
  const entries = String(result.stdout)
    .split('\0')
    .filter((entry) => entry.length > 2);
  const files = new Set(entries.filter((entry) => !entry.startsWith('S ')).map((entry) => entry.slice(2)));
  return [...files]
    .filter(
      (p) =>
        p !== runFilesDir &&
        !p.startsWith(`${runFilesDir}/`) &&
        !isProtected(p, defaultProtected) &&
        !noise.has(basename(p)),
    )
    .sort();
}

/**
 * The text of `path` when it is a regular file (not a symlink, no symlinked directory on
 * the way out of the working copy) of at most `limit` characters without NUL bytes;
 * `undefined` otherwise.
 */
async function readBounded(root: string, path: string, limit: number): Promise<string | undefined> {
  const full = join(root, path);
  if ((await resolveInside(root, path).catch(() => undefined)) === undefined) return undefined;
  const info = await lstat(full).catch(() => undefined);
  if (!info?.isFile() || info.size > limit * 4) return undefined;
  const handle = await open(full, 'r').catch(() => undefined);
  if (!handle) return undefined;
  try {
    const text = (await handle.readFile()).toString('utf8');
    if (text.includes('\0') || text.length > limit) return undefined;
    return text;
  } finally {
    await handle.close();
  }
}
