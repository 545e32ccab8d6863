import { CodefleetError } from '@codefleet/core';
import { scanForSecrets, type SecretHit, type SecretSource } from '@codefleet/log';
import type { Workspace } from '@codefleet/workspace';

/**
 * Scans what the work branch adds for codefleet's own secret values and known token shapes
 * (plain, base64, URL-encoded, hex) before anything is pushed, and with it the words that
 * are published beside it (`metadata`: the commit message, branch name, pull request title
 * and body, by what they are). An agent may have read a key from its environment or a file,
 * a repository script may have written one, a title may hold one (masked, but not when it is
 * encoded); a pushed secret is public for good, so a hit fails the job for good. The reason
 * names the files and how the value was written, never the value.
 *
 * @throws {CodefleetError} `secret_in_diff` (permanent) on any hit.
 */
export async function refuseSecrets(
  ws: Workspace,
  secrets: SecretSource | undefined,
  metadata: Readonly<Record<string, string>> = {},
): Promise<void> {
  const published = Object.entries(metadata).map(([what, text]) => ({ file: `(${what})`, added: text }));
  const hits = scanForSecrets([...(await ws.addedContent()), ...published], secrets);
  if (hits.length === 0) return;
  const described = [...new Set(hits.map(describe))];
  throw new CodefleetError(
    'secret_in_diff',
    `the change holds ${described.length === 1 ? 'a secret' : 'secrets'}: ${described.slice(0, 10).join('; ')}; nothing was pushed. Remove it from the change (and rotate the secret if it was real)`,
    {
      verdict: 'permanent',
      details: { files: [...new Set(hits.map((hit) => hit.file))].slice(0, 50) },
    },
  );
}

function describe(hit: SecretHit): string {
  const what =
    hit.kind === 'secret' ? "one of codefleet's configured secret values" : `a ${hit.shape ?? 'known'} token`;
  const how = hit.encoding === 'plain' ? '' : ` (${hit.encoding}-encoded)`;
  return `${what}${how} in ${hit.where === 'name' ? 'the name of ' : ''}${hit.file}`;
}
