import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';

// `npm ci` is a newcomer's first command. npm 11 warns about every package whose install
// script `allowScripts` in the root package.json neither allows nor refuses, which reads as
// something wrong with their machine. Each such package is decided there, with a reason:
// better-sqlite3 builds or fetches its binary; msgpackr-extract (BullMQ's msgpackr) ships
// its binary as an optional package and msgpackr falls back to JavaScript without it;
// @parcel/watcher and unrs-resolver are tooling that works without theirs.

interface Lock {
  packages: Record<string, { hasInstallScript?: boolean }>;
}

const root = new URL('../../../', import.meta.url);
const read = <T>(file: string) => JSON.parse(readFileSync(new URL(file, root), 'utf8')) as T;

describe('install scripts', () => {
  it('every package with an install script is allowed or refused in allowScripts', () => {
    const lock = read<Lock>('package-lock.json');
    const decided = Object.keys(read<{ allowScripts: Record<string, boolean> }>('package.json').allowScripts);
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
      .filter((name) => name !== '');
    expect(withScripts.length).toBeGreaterThan(0);
    expect(withScripts.filter((name) => !decided.includes(name))).toEqual([]);
  });
});
