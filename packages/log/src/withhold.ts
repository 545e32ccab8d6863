import { maskSecrets } from './mask.js';
import { scanForSecrets } from './scan-secrets.js';
import type { SecretSource } from './secret-registry.js';

/** What stands in for a line withheld by {@link maskForPublishing}. */
export const WITHHELD = '[withheld: it held a secret value in encoded form]';

// One line of a wrapped blob: hex digits with dump separators, or one word of the base64 or
// percent-encoding alphabet. Prose has spaces between words that are not all hex.
const encodedLine = /^(?:(?:[\s:,]|0x|\\x)*[0-9A-Fa-f]{2}){8,}[\s:,]*$|^\s*[A-Za-z0-9+/=_%.~-]{16,}\s*$/;

/**
 * {@link maskSecrets}, then what still betrays a secret in an encoded form the masker does
 * not rewrite (hex, base64, percent-encoded; see `scanForSecrets`) is withheld: each line
 * that holds one alone, then, for a blob wrapped over lines, every line that looks encoded,
 * and the whole text as a last resort. For text that leaves codefleet for people: reports
 * (issue comments, chat replies, callbacks), pull request titles and bodies, branch names.
 * A value split, reversed, compressed or encoded twice still passes.
 */
export function maskForPublishing(text: string, secrets?: SecretSource): string {
  const masked = maskSecrets(text, secrets);
  // A secret worth looking for is at least 8 bytes: no encoding of one is shorter.
  if (masked.length < 8 || !betrays(masked, secrets)) return masked;
  const lines = masked.split('\n').map((line) => (betrays(line, secrets) ? WITHHELD : line));
  if (!betrays(lines.join('\n'), secrets)) return lines.join('\n');
  const unwrapped = lines.map((line) => (encodedLine.test(line) ? WITHHELD : line)).join('\n');
  return betrays(unwrapped, secrets) ? WITHHELD : unwrapped;
}

// Plain hits are left out: the masker has rewritten every plain value it knows, and what it
// left plain (a redacted PEM block's own frame) is its output, not a secret.
function betrays(text: string, secrets: SecretSource | undefined): boolean {
  return scanForSecrets([{ file: '', added: text }], secrets).some((hit) => hit.encoding !== 'plain');
}
