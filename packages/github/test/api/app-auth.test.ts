import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger, maskSecrets, SecretRegistry } from '@codefleet/log';
import { startGithubStandIn, type GithubStandIn } from '@codefleet/testkit';
import { githubAppTokens } from '../../src/index.js';

let gh: GithubStandIn;
beforeAll(async () => {
  gh = await startGithubStandIn();
});
afterAll(async () => {
  await gh?.close();
});

function logInto(lines: string[], secrets: SecretRegistry) {
  return createLogger({ secrets, destination: { write: (line: string) => lines.push(line) } });
}

/**
 * Answers the token exchange with `token`, a shape GitHub could move to any day: the
 * stand-in mints `ghs_…` tokens, which the known-shape patterns mask anyway.
 */
async function exchangeServing(token: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const ok = req.method === 'POST' && /^\/app\/installations\/\d+\/access_tokens$/.test(req.url ?? '');
    res.writeHead(ok ? 201 : 404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        ok ? { token, expires_at: new Date(Date.now() + 3_600_000).toISOString() } : { message: 'Not Found' },
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('GitHub App tokens reach masking', () => {
  it('registers every installation token it mints', async () => {
    const app = gh.createApp();
    const registry = new SecretRegistry(['configured-secret-value']);
    const tokens = githubAppTokens({ ...app, apiUrl: gh.url, secrets: registry });
    try {
      const minted = await tokens.token();
      expect(gh.installationTokens).toEqual([minted]);
      expect(registry.values()).toContain(minted);
      // Masked as a known secret (`***`), ahead of the shape rule that would keep `ghs_`.
      expect(maskSecrets(`push with ${minted}`, registry)).toBe('push with ***');
    } finally {
      tokens.close();
    }
  });

  it('an opaque installation token is masked in log lines and in maskSecrets', async () => {
    const opaque = 'v2.opaque-Installation.Token-9b8c7d6e5f4a';
    expect(maskSecrets(`x ${opaque} y`)).toBe(`x ${opaque} y`);
    const { url, server } = await exchangeServing(opaque);
    const app = gh.createApp();
    const registry = new SecretRegistry();
    const lines: string[] = [];
    const log = logInto(lines, registry);
    const tokens = githubAppTokens({ ...app, apiUrl: url, secrets: registry });
    try {
      const minted = await tokens.token();
      expect(minted).toBe(opaque);
      log.warn(
        { event: 'git.push_failed', stderr: `fatal: https://github.com/ using ${minted}` },
        `push failed with ${minted}`,
      );
      expect(lines.join('')).not.toContain(opaque);
      expect(lines.join('')).toContain('push failed with ***');
      expect(maskSecrets(`comment quoting ${minted}`, registry)).toBe('comment quoting ***');
    } finally {
      tokens.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
