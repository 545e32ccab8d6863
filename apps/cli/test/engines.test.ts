import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import semver from 'semver';
import { sqliteDriver } from '@codefleet/sqlite';

// The machines run Node 20.19+, and codefleet must run on Node 22 and 24 too. npm only
// warns when a package's `engines` excludes the running Node, and a lock update can quietly
// bring in a release that has dropped Node 20 (content-type 3, under @octokit/request, did:
// the root package.json overrides it back to 2.x, which has the same API). This reads the
// committed lock, so such an update fails here instead of on a user's Node 20 host.

/** The oldest release of each Node line codefleet supports. */
const supported = ['20.19.0', '22.13.0', '24.0.0'];

/**
 * Packages in the lock whose `engines` exclude a supported Node, each with why that is
 * harmless. An entry that no longer matches anything must go (the last test says so).
 */
const tolerated: Record<string, { range: string; why: string }> = {
  'node_modules/@anthropic-ai/claude-code': {
    range: '2.x',
    why: 'a dev dependency (the real Claude Code CLI under test in @codefleet/agents) that ships a native binary: its postinstall links bin/claude.exe from the platform package and runs on Node 20 (CI installs and runs it there), and no Node ever loads it after that',
  },
  'packages/sqlite/node20': {
    range: '0.x',
    why: "@codefleet/sqlite's optional wrapper of better-sqlite3, on purpose only for the Nodes without a complete node:sqlite: its engines range is what makes npm skip the native addon (no download, no build) on Node 22.16+ and 24",
  },
  'node_modules/cookie': {
    range: '2.x',
    why: 'reached only through fastify → light-my-request, which fastify loads for inject(); the SQS emulator (fauxqs, tests and chaos only) never calls it',
  },
};

interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
  link?: boolean;
}

const lock = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../package-lock.json', import.meta.url)), 'utf8'),
) as {
  packages: Record<string, LockEntry>;
};

/** Each installed package (path in the lock, version, node range) whose range leaves out a supported Node. */
function excluding(): { path: string; version: string; range: string; unsupported: string[] }[] {
  return Object.entries(lock.packages).flatMap(([path, entry]) => {
    const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined;
    if (!path || entry.link || range === undefined) return [];
    const unsupported = supported.filter((node) => !semver.satisfies(node, range));
    return unsupported.length > 0 ? [{ path, version: entry.version ?? '?', range, unsupported }] : [];
  });
}

describe('dependencies and the Node versions codefleet supports', () => {
  it('finds engines ranges in the lock (the check reads real entries)', () => {
    const withEngines = Object.values(lock.packages).filter(
      (entry) => entry.engines && !Array.isArray(entry.engines) && entry.engines.node,
    );
    expect(withEngines.length).toBeGreaterThan(100);
    // A range that leaves out Node 20 is recognised as such.
    expect(semver.satisfies('20.19.0', '>=22')).toBe(false);
  });

  it(`every package in package-lock.json declares support for Node ${supported.join(', ')}, or is tolerated with a reason`, () => {
    const problems = excluding()
      .filter(({ path, version }) => !(tolerated[path] && semver.satisfies(version, tolerated[path].range)))
      .map(
        ({ path, version, range, unsupported }) =>
          `${path.replace(/^.*node_modules\//, '')}@${version} (from ${path}) requires node ${range}: not ${unsupported.join(', ')}`,
      );
    expect(problems).toEqual([]);
  });

  it('keeps @octokit/request on a content-type that supports Node 20', () => {
    const found = Object.entries(lock.packages).filter(([path]) => path.endsWith('node_modules/content-type'));
    expect(found.length).toBeGreaterThan(0);
    for (const [, entry] of found) expect(semver.satisfies(entry.version ?? '', '^2.1.0')).toBe(true);
  });

  it('every tolerated entry is still needed', () => {
    const stillExcluding = new Set(excluding().map(({ path }) => path));
    const stale = Object.keys(tolerated).filter((path) => !stillExcluding.has(path));
    expect(stale).toEqual([]);
  });

  it("better-sqlite3 is installed (through @codefleet/sqlite's optional ./node20) exactly where the driver needs it", () => {
    const wrapper = lock.packages['packages/sqlite/node20'];
    const range = wrapper?.engines && !Array.isArray(wrapper.engines) ? wrapper.engines.node : undefined;
    expect(range).toBeDefined();
    expect((lock.packages['node_modules/better-sqlite3'] as LockEntry & { optional?: boolean }).optional).toBe(true);
    const nodes = ['20.19.0', '20.20.1', '22.13.0', '22.15.9', '22.16.0', '22.23.5', '23.11.0', '24.0.0', '26.1.0'];
    expect(nodes.map((node) => [node, semver.satisfies(node, range!)])).toEqual(
      nodes.map((node) => [node, sqliteDriver(node) === 'better-sqlite3']),
    );
  });
});
