/**
 * Model-style replies, each applied for real to a real repository as the built-in agent
 * applies them (parse, then apply with continue-on-error), against the whole tree expected
 * after it: the files named in the fixture changed or gone, every other file as it was.
 * A refusal must name its reason and leave the refused file untouched: never a wrong tree
 * with a success. The fixtures (test/replies/*.txt) say which behaviour of Aider or Codex
 * each case follows; their format is described in test/replies/README.md.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { createTempRepo, gitTestEnv } from '@codefleet/testkit';
import { applyPatch, parsePatch, patchSucceeded } from '../src/index.js';

const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' };
const dir = fileURLToPath(new URL('./replies/', import.meta.url));

interface Case {
  title: string;
  before: Record<string, string>;
  reply: string;
  after: Record<string, string>;
  gone: string[];
  refused?: RegExp;
}

/** Reads a fixture: `%%% <directive> [args]` lines, each followed by its text up to the next one. */
function readCase(name: string, text: string): Case {
  const found: Case = { title: name, before: {}, reply: '', after: {}, gone: [] };
  const sections = text.split(/^%%% /m).slice(1);
  for (const section of sections) {
    const newline = section.indexOf('\n');
    const [directive = '', ...args] = section.slice(0, newline).trim().split(/\s+/);
    const raw = section.slice(newline + 1);
    const body = args.includes('crlf')
      ? raw.replaceAll('\n', '\r\n')
      : args.includes('escapes')
        ? raw.replaceAll('\\r', '\r')
        : raw;
    const path = args[0] ?? '';
    switch (directive) {
      case 'case':
        found.title = section.slice(0, newline).trim().slice('case '.length);
        break;
      case 'why':
        break;
      case 'before':
        found.before[path] = body;
        break;
      case 'reply':
        found.reply = body;
        break;
      case 'after':
        found.after[path] = body;
        break;
      case 'gone':
        found.gone.push(path);
        break;
      case 'refused':
        found.refused = new RegExp(section.slice(0, newline).trim().slice('refused '.length));
        break;
      default:
        throw new Error(`${name}: unknown directive %%% ${directive}`);
    }
  }
  return found;
}

async function tree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const rel = relative(root, join(entry.parentPath, entry.name));
    if (rel === '.git' || rel.startsWith('.git/') || !entry.isFile()) continue;
    out[rel] = await readFile(join(root, rel), 'utf8');
  }
  return out;
}

/** The reply applied: whether it all applied, and every reason given (a parse error's, each failed command's). */
async function applyReply(root: string, reply: string): Promise<{ ok: boolean; reasons: string[] }> {
  let parsed;
  try {
    parsed = parsePatch(reply);
  } catch (error) {
    return { ok: false, reasons: [(error as Error).message] };
  }
  const result = await applyPatch(parsed.commands, { root, env, onError: 'continue' });
  return {
    ok: patchSucceeded(parsed, result),
    reasons: result.results.flatMap((r) => (r.error === undefined ? [] : [r.error])),
  };
}

const names = (await readdir(dir)).filter((n) => n.endsWith('.txt')).sort();
const cases = await Promise.all(names.map(async (n) => readCase(n, await readFile(join(dir, n), 'utf8'))));

describe('model-style replies', () => {
  it('the corpus is there', () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
  });

  it.each(cases.map((c) => [c.title, c] as const))('%s', async (_title, c) => {
    const repo = await createTempRepo({ files: c.before });
    try {
      const { ok, reasons } = await applyReply(repo.path, c.reply);
      const expected: Record<string, string> = { ...c.before, ...c.after };
      for (const path of c.gone) delete expected[path];
      if (c.refused === undefined) {
        expect(reasons).toEqual([]);
        expect(ok).toBe(true);
      } else {
        expect(ok).toBe(false);
        expect(reasons.join('\n')).toMatch(c.refused);
      }
      expect(await tree(repo.path)).toEqual(expected);
    } finally {
      await repo.dispose();
    }
  });
});
