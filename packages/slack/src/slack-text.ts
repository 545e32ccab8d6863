/**
 * Reads the text of a Slack message as the user meant it. Slack sends message text in its
 * own markup (docs: "Formatting text for app surfaces"): `&`, `<` and `>` arrive as `&amp;`,
 * `&lt;` and `&gt;` (only those three), and angle brackets hold links and references:
 * `<https://…|label>` and `<https://…>` links (a URL the user typed is auto-linked so),
 * `<mailto:…|label>`, `<@U…>` / `<@U…|name>` users, `<#C…|name>` channels, `<!here>`,
 * `<!channel>`, `<!everyone>`, `<!subteam^S…|@team>` groups and `<!date^…|fallback>` dates.
 * Each becomes the plain text a reader sees; the bot's own mention is taken out.
 */
export function readSlackText(text: string, botUserId?: string): string {
  // Without the bot's id (an old record), the first user mention is taken for the bot's.
  const bot = botUserId ?? /<@([UW][A-Z0-9]+)(?:\|[^>]*)?>/.exec(text)?.[1];
  const out = text.replace(/<([^<>]*)>/g, (_whole, inner: string) => reference(inner, bot));
  // The spaces around a removed mention (marked with a private-use character) close up; the rest stays as sent.
  return decodeEntities(out)
    .replace(/[ \t]*\uE000[ \t]*/g, ' ')
    .trim();
}

/** Slack's three entities, and no others: `&quot;` in a message is what the user typed. */
function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt);/g, (_whole, name: string) => (name === 'amp' ? '&' : name === 'lt' ? '<' : '>'));
}

/** One `<…>` reference as text. Entities stay encoded here: they are decoded once, afterwards. */
function reference(inner: string, botUserId: string | undefined): string {
  const bar = inner.indexOf('|');
  const target = bar === -1 ? inner : inner.slice(0, bar);
  const label = bar === -1 ? undefined : inner.slice(bar + 1);
  if (target.startsWith('@')) {
    if (botUserId !== undefined && target === `@${botUserId}`) return '\uE000';
    return label === undefined || label === '' ? target : `@${label.replace(/^@/, '')}`;
  }
  if (target.startsWith('#')) return label === undefined || label === '' ? target : `#${label}`;
  if (target.startsWith('!')) return special(target.slice(1), label);
  return link(target, label);
}

/** `<!here>`, `<!channel>`, `<!everyone>`, `<!subteam^…|@team>`, `<!date^…|fallback>`. */
function special(name: string, label: string | undefined): string {
  if (label !== undefined && label !== '') return label;
  const word = name.split('^')[0] ?? name;
  return word === 'date' ? '' : `@${word}`;
}

/**
 * A link: its label when the label is the link as typed (Slack's auto-link of `example.com`
 * is `<http://example.com|example.com>`), else the URL, with a different label in front.
 */
function link(url: string, label: string | undefined): string {
  if (label === undefined || label === '') return url;
  const bare = url.replace(/^[a-z][a-z0-9+.-]*:(\/\/)?/i, '');
  return label === url || label === bare ? label : `${label} (${url})`;
}
