import { describe, expect, it } from '@jest/globals';
import { readSlackText } from '../src/slack-text.js';

// Message text as Slack sends it (docs: "Formatting text for app surfaces") read back to what the user typed.
describe('readSlackText', () => {
  it('decodes the three entities Slack escapes, and only those', () => {
    expect(readSlackText('a &lt; b &amp;&amp; c &gt; d')).toBe('a < b && c > d');
    // What the user typed literally: `&amp;lt;` is an escaped `&lt;`, and `&quot;` is no Slack entity.
    expect(readSlackText('&amp;lt; stays &amp;quot; &quot;')).toBe('&lt; stays &quot; &quot;');
  });

  it('reads links as the URL, or as the label typed when Slack auto-linked it', () => {
    expect(readSlackText('repo=<https://github.com/acme/gadgets> fix it')).toBe(
      'repo=https://github.com/acme/gadgets fix it',
    );
    expect(readSlackText('see <http://example.com|example.com>')).toBe('see example.com');
    expect(readSlackText('mail <mailto:a@example.com|a@example.com>')).toBe('mail a@example.com');
    expect(readSlackText('read <https://docs.example/x?a=1&amp;b=2|the docs>')).toBe(
      'read the docs (https://docs.example/x?a=1&b=2)',
    );
  });

  it("reads user, channel, group and broadcast references as text, and takes the bot's mention out", () => {
    expect(readSlackText('<@U0BOT> ask <@U0ALICE> and <@U0BOB|bob> in <#C0GEN|general> or <#C0OPS>', 'U0BOT')).toBe(
      'ask @U0ALICE and @bob in #general or #C0OPS',
    );
    expect(
      readSlackText('<!here> <!channel> <!everyone> <!subteam^S0DEV|@devs> <!date^1392734382^{date}|Feb 18, 2014>'),
    ).toBe('@here @channel @everyone @devs Feb 18, 2014');
  });

  it('keeps line breaks and indentation, and closes up only around the removed mention', () => {
    expect(readSlackText('<@U0BOT>   fix this:\n```\n  if (a &lt; b) {}\n```', 'U0BOT')).toBe(
      'fix this:\n```\n  if (a < b) {}\n```',
    );
    expect(readSlackText('please <@U0BOT> run   it', 'U0BOT')).toBe('please run   it');
  });

  it("takes the first user mention for the bot's when the record has no bot id", () => {
    expect(readSlackText('<@U0BOT> ping <@U0ALICE>')).toBe('ping @U0ALICE');
  });
});
