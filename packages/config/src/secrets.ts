import { type Env, readVariable } from './expand.js';

/**
 * Variable names whose values are treated as secrets: `*_API_KEY`, `*_TOKEN`, `*_SECRET*`,
 * `*PASSWORD*`, `*_PRIVATE_KEY`, `*_ACCESS_KEY` (this covers AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, GITHUB_TOKEN, SLACK_SIGNING_SECRET, ...). Masking a harmless value by
 * mistake costs little; missing a real key costs a leaked credential.
 */
const SECRET_NAME =
  /(?:^|_)(?:SECRET|PASSWORD|PASSWD|API_?KEY(?:_|$)|TOKEN(?:_|$)|PRIVATE_KEY(?:_|$)|ACCESS_KEY(?:_|$)|CREDENTIALS?(?:_|$))/i;

/** Shorter values are not masked: masking `true` or `1234` would garble every log line. */
const MIN_SECRET_LENGTH = 6;

// A line of a multi-line secret (a PEM key) is masked on its own only if it is this long,
// so that short lines such as base64 padding do not turn into masks everywhere.
const MIN_SECRET_LINE_LENGTH = 16;

/** True when a variable of this name holds a secret by naming convention. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * The secret values in `env`, longest first, without duplicates: values of variables whose
 * names look secret, plus those of the explicitly named variables (`token_env`,
 * `api_key_env`, `logging.redact_values`). Multi-line values (PEM keys) also contribute their
 * long lines, so a key logged line by line is still masked. `extraValues` are secrets the
 * config holds itself, such as the password of a Redis URL.
 */
export function collectSecrets(
  env: Env,
  extraNames: Iterable<string> = [],
  extraValues: Iterable<string> = [],
): string[] {
  const names = new Set<string>(Object.keys(env).filter(isSecretName));
  for (const name of extraNames) names.add(name);
  const values = new Set<string>([...extraValues].filter((value) => value.length >= MIN_SECRET_LENGTH));
  for (const name of names) {
    const value = readVariable(env, name);
    if (value === undefined || value.length < MIN_SECRET_LENGTH) continue;
    values.add(value);
    // Values read from files often end in a newline that never shows up where they are used.
    const trimmedValue = value.trim();
    if (trimmedValue.length >= MIN_SECRET_LENGTH) values.add(trimmedValue);
    if (!value.includes('\n')) continue;
    for (const line of value.split(/\r?\n/)) {
      const trimmed = line.trim();
      if (trimmed.length >= MIN_SECRET_LINE_LENGTH && !trimmed.startsWith('-----')) values.add(trimmed);
    }
  }
  return [...values].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
}
