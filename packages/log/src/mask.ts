import { secretValues, type SecretSource } from './secret-registry.js';

/** Replaces secrets in one piece of text; built once by {@link createMasker}, then reused per line. */
export type Masker = (text: string) => string;

/** What a configured secret value (or any value without a recognisable kind) is replaced by. */
export const MASK = '***';

/** What follows the kept prefix of a token of a known kind, e.g. `ghp_[REDACTED]`. */
export const REDACTED = '[REDACTED]';

type Groups = Record<string, string | undefined>;

interface Rule {
  /** Name of the group wrapping the whole alternative; tells the replacer which rule matched. */
  id: string;
  pattern: string;
  replace: (groups: Groups) => string;
  /** A credential recognisable on its own, without the words around it: the diff scanner looks for these. */
  shape?: true;
}

/** Case-insensitive spelling of a word without the `i` flag, which would also apply to secrets. */
function anyCase(word: string): string {
  return [...word].map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c)).join('');
}

// A token of a known kind after `Bearer`/`token` is left to its own rule, which keeps the hint.
const NOT_KNOWN_KIND = '(?!gh[pousr]_|github_pat_|glpat-|npm_|sk-|xox[abposr]-|AKIA|ASIA)';

/**
 * Built-in patterns, most specific first. Where several match at the same position the first
 * listed wins; otherwise the leftmost match wins (one pass over the text).
 */
const BUILTIN_RULES: readonly Rule[] = [
  {
    id: 'pem',
    shape: true,
    pattern: '-----BEGIN (?<pemKind>[A-Z ]*)PRIVATE KEY-----[\\s\\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)',
    replace: (g) =>
      `-----BEGIN ${g.pemKind ?? ''}PRIVATE KEY-----${REDACTED}-----END ${g.pemKind ?? ''}PRIVATE KEY-----`,
  },
  {
    // https://user:pass@host and https://x-access-token:TOKEN@github.com; a userinfo part is
    // a credential often enough that all of it goes.
    id: 'url',
    pattern: `(?<urlScheme>\\b[A-Za-z][A-Za-z0-9+.-]*://)[^\\s/?#@"'<>\\\\]+@`,
    replace: (g) => `${g.urlScheme ?? ''}${MASK}@`,
  },
  {
    // The value of an Authorization header, as JSON ("authorization":"...") or as text
    // (Authorization: Basic ...). A JSON null or object value is not a string and not matched.
    id: 'authorization',
    pattern:
      `(?<authKey>\\b(?:${anyCase('proxy-')})?${anyCase('authorization')}(?:"\\s*:\\s*"|'\\s*:\\s*'|\\s*[:=]\\s*))` +
      `(?![{\\[]|null\\b)(?:[^"'\\\\\\r\\n,;]|\\\\.)+`,
    replace: (g) => `${g.authKey ?? ''}${MASK}`,
  },
  {
    id: 'bearer',
    pattern: `(?<bearerWord>\\b${anyCase('bearer')}\\s+)${NOT_KNOWN_KIND}[A-Za-z0-9\\-._~+/]{8,}=*`,
    replace: (g) => `${g.bearerWord ?? ''}${MASK}`,
  },
  {
    // `Authorization: token <t>` as GitHub accepts it. The length floor keeps prose such as
    // "token expired" readable.
    id: 'tokenWord',
    pattern: `(?<tokenPrefix>\\b${anyCase('token')}\\s+)${NOT_KNOWN_KIND}[A-Za-z0-9_\\-.]{20,}`,
    replace: (g) => `${g.tokenPrefix ?? ''}${MASK}`,
  },
  {
    id: 'github',
    shape: true,
    pattern: '(?<![A-Za-z0-9])(?<ghKind>gh[pousr]_)[A-Za-z0-9]{36,}',
    replace: (g) => `${g.ghKind ?? ''}${REDACTED}`,
  },
  { id: 'githubPat', shape: true, pattern: 'github_pat_[A-Za-z0-9_]{22,}', replace: () => `github_pat_${REDACTED}` },
  {
    id: 'gitlab',
    shape: true,
    pattern: '(?<![A-Za-z0-9])glpat-[A-Za-z0-9_\\-]{20,}',
    replace: () => `glpat-${REDACTED}`,
  },
  {
    id: 'npm',
    shape: true,
    pattern: '(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])',
    replace: () => `npm_${REDACTED}`,
  },
  {
    id: 'anthropic',
    shape: true,
    pattern: '(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_\\-]{10,}',
    replace: () => `sk-ant-${REDACTED}`,
  },
  {
    id: 'openaiProject',
    shape: true,
    pattern: '(?<![A-Za-z0-9])sk-proj-[A-Za-z0-9_\\-]{10,}',
    replace: () => `sk-proj-${REDACTED}`,
  },
  { id: 'openai', shape: true, pattern: '(?<![A-Za-z0-9])sk-[A-Za-z0-9_\\-]{20,}', replace: () => `sk-${REDACTED}` },
  {
    id: 'aws',
    shape: true,
    pattern: '(?<![A-Z0-9])(?<awsKind>AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])',
    replace: (g) => `${g.awsKind ?? ''}${REDACTED}`,
  },
  {
    id: 'slack',
    shape: true,
    pattern: '(?<![A-Za-z0-9])(?<slackKind>xox[abposr]-)[A-Za-z0-9-]{10,}',
    replace: (g) => `${g.slackKind ?? ''}${REDACTED}`,
  },
];

/** The token shapes among the built-in rules, by rule id (`github`, `aws`, `pem`, ...). */
export const tokenShapes: readonly { kind: string; pattern: string }[] = BUILTIN_RULES.filter((rule) => rule.shape).map(
  (rule) => ({ kind: rule.id, pattern: rule.pattern }),
);

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/**
 * The forms a configured value can take in output: as is, and JSON-escaped as it appears
 * inside a serialized log line when it holds quotes, backslashes or control characters.
 */
function secretForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === '') continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  // Longest first, so a secret that contains another is masked whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * Compiles one regular expression for the configured secret values plus every built-in token
 * pattern, so masking a line is a single pass. Configured values come first: at the same
 * position an exact known secret beats a pattern.
 */
export function createMasker(secrets: readonly string[] = []): Masker {
  const forms = secretForms(secrets);
  const rules: Rule[] = [...BUILTIN_RULES];
  if (forms.length > 0)
    rules.unshift({ id: 'secret', pattern: forms.map(escapeRegExp).join('|'), replace: () => MASK });
  const regex = new RegExp(rules.map((rule) => `(?<${rule.id}>${rule.pattern})`).join('|'), 'g');
  const replacer = (match: string, ...args: unknown[]): string => {
    const groups = args[args.length - 1] as Groups;
    const rule = rules.find((r) => groups[r.id] !== undefined);
    return rule === undefined ? match : rule.replace(groups);
  };
  return (text) => text.replace(regex, replacer);
}

const defaultMasker = createMasker();
const maskerCache = new WeakMap<readonly string[], Masker>();

/**
 * Masks secrets in `text`: every configured value in `secrets` (as `***`) and tokens of known
 * kinds (GitHub, GitLab, npm, OpenAI, Anthropic, AWS access key ids, Slack, PEM private keys,
 * `Bearer`, `Authorization` values, credentials in URLs), keeping a kind hint such as
 * `ghp_[REDACTED]`.
 * Use it for any text that leaves the process: PR bodies, issue comments, stored agent output.
 * `secrets` may be a `SecretRegistry`, whose values as of this call are used. The compiled
 * masker is cached per array of values (a registry keeps one array until it changes).
 */
export function maskSecrets(text: string, secrets?: SecretSource): string {
  const values = secretValues(secrets);
  if (values.length === 0) return defaultMasker(text);
  let masker = maskerCache.get(values);
  if (masker === undefined) {
    masker = createMasker(values);
    maskerCache.set(values, masker);
  }
  return masker(text);
}
