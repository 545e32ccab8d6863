import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '@codefleet/config';
import { codeBlocks, docFiles, docSection, repoRoot } from '@codefleet/testkit';

// README.md is the guide and docs/*.md the reference: their links resolve and their config
// examples load as written (the agent examples run in docs-agents.test.ts).
const read = (file: string) => readFileSync(join(repoRoot, file), 'utf8');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** The anchors of a Markdown file's headings (outside code blocks). */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^\s*```[\w-]*\s*$/.test(line)) inFence = !inFence;
    const m = inFence ? null : /^#{1,6} (.*)$/.exec(line);
    if (m) found.add(slug(m[1]!));
  }
  return found;
}

// What the examples name in the environment (the Slack example's default token variables).
const env = { REDIS_PASSWORD: 'p', DEEPSEEK_API_KEY: 'sk-x', SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1' };
const load = (text: string) => parseConfig(text, { env, baseDir: '/srv', hostname: 'h' }).config;

describe('the docs', () => {
  it('every link between README.md, docs/ and the tree resolves, anchors included', () => {
    const broken: string[] = [];
    for (const file of docFiles()) {
      const text = read(file).replace(/^\s*```[\s\S]*?^\s*```$/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#');
        const to = path === '' ? file : relative(repoRoot, join(repoRoot, dirname(file), path!));
        if (!existsSync(join(repoRoot, to))) broken.push(`${file}: ${target} (no ${to})`);
        else if (anchor !== undefined && !anchors(read(to)).has(anchor)) broken.push(`${file}: ${target} (no heading)`);
      }
    }
    expect(broken).toEqual([]);
    // The reference is in docs/, and the guide points at every file of it.
    const guide = read('README.md');
    expect(docFiles().filter((file) => file !== 'README.md' && !guide.includes(`](${file})`))).toEqual([]);
  });

  it('every config example loads as written; the costs example prices and caps', () => {
    const sections = new Set(Object.keys(load('')));
    const examples = docFiles().flatMap((file) =>
      codeBlocks(read(file))
        .filter((block) => block.lang === 'yaml' && sections.has(/^(\w+):/.exec(block.code)?.[1] ?? ''))
        .map((block) => ({ file, code: block.code })),
    );
    // README's DeepSeek and fleet examples, docs/agents.md's command agent, DeepSeek and costs,
    // docs/chat.md's Slack config, docs/operations.md's fleet config.
    expect(examples.length).toBeGreaterThanOrEqual(7);
    for (const { file, code } of examples) {
      let problem = '';
      try {
        load(code);
      } catch (error) {
        problem = String(error);
      }
      expect([file, code, problem]).toEqual([file, code, '']);
    }

    const { costs } = load(codeBlocks(docSection('Costs and budgets').text).find((b) => b.lang === 'yaml')!.code);
    expect(costs.prices['qwen2.5-coder:*']).toEqual({ input_per_mtok: 0, output_per_mtok: 0 });
    expect(Object.values(costs.prices).length).toBeGreaterThanOrEqual(2);
    expect(costs.budget_usd.job).toBeGreaterThan(0);
    expect(costs.budget_usd.day).toBeGreaterThan(costs.budget_usd.job ?? 0);
  });
});
