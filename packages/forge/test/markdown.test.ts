import { describe, expect, it } from '@jest/globals';
import { escapeInline, fence, table } from '../src/markdown.js';

describe('escapeInline', () => {
  it('keeps untrusted text on its line and in its cell: no pings, no issue links, no markup', () => {
    expect(escapeInline('a | b\nFixes #12 @octocat <b>x</b>')).toBe(
      'a \\| b Fixes #&#8203;12 @&#8203;octocat &lt;b&gt;x&lt;/b&gt;',
    );
    expect(escapeInline('# title, mail me@ home')).toBe('\\# title, mail me@ home');
  });

  it('cuts between escapes, so a cut never leaves a backslash that would eat the cell border', () => {
    const cut = escapeInline('ab||||||', 5);
    expect(cut.length).toBeLessThanOrEqual(5);
    expect(cut).toBe('ab\\|…');
    expect(escapeInline('short', 5)).toBe('short');
  });
});

describe('fence', () => {
  it('opens with a fence longer than any backtick run inside, so the content cannot close it', () => {
    const block = fence('before\n````\nafter', 'text');
    expect(block).toBe('`````text\nbefore\n````\nafter\n`````');
    expect(fence('plain')).toBe('```\nplain\n```');
  });
});

describe('table', () => {
  it('writes a GFM table of already escaped cells', () => {
    expect(table(['A', 'B'], [[escapeInline('x|y'), '1']])).toBe('| A | B |\n| --- | --- |\n| x\\|y | 1 |');
  });
});
