import { describe, expect, it } from '@jest/globals';
import { bounded, codeBlock, escapeMrkdwn, maxMessageChars } from '../src/index.js';

describe('mrkdwn for untrusted text', () => {
  it('escapes the three characters that make broadcasts, mentions and links', () => {
    expect(escapeMrkdwn('<!channel> <@U123> <https://evil.example|here> & more')).toBe(
      '&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil.example|here&gt; &amp; more',
    );
  });

  it('keeps a code block closed against backtick runs in the text', () => {
    const block = codeBlock('before\n```\n<!here> *bold*\n````more');
    // Exactly the opening and the closing fence: nothing inside can end the block early.
    expect(block.match(/```/g)).toHaveLength(2);
    expect(block.startsWith('```\n') && block.endsWith('\n```')).toBe(true);
    expect(block).toContain('&lt;!here&gt;');
  });

  it("bounds long text below Slack's limits and says it was cut", () => {
    const text = bounded('x'.repeat(50_000));
    expect(text.length).toBeLessThanOrEqual(maxMessageChars);
    expect(text).toMatch(/cut for Slack\)$/);
    expect(bounded('short')).toBe('short');
  });
});
