// Shared set-up of the workspace tests: an origin repository and a cache dir in temp
// dirs, and a manager whose git calls run under the isolated test git environment.
import { stat } from 'node:fs/promises';
import { createTempDir, createTempRepo, gitTestEnv, type TempDir, type TempRepo } from '@codefleet/testkit';
import { createWorkspaceManager, type WorkspaceManager } from '../src/index.js';

/** Test git environment plus PATH, so `git` is found (runProcess inherits nothing). */
export function testGitEnv(): Record<string, string> {
  return gitTestEnv({ PATH: process.env.PATH ?? '/usr/bin:/bin' });
}

/** An origin repo, a cache dir and a manager over them. */
export interface Fixture {
  origin: TempRepo;
  cache: TempDir;
  manager: WorkspaceManager;
  dispose(): Promise<void>;
}

/** Creates an origin with `files` on `main` and a manager with `reuse`. */
export async function createFixture(files: Record<string, string>, reuse: boolean): Promise<Fixture> {
  const origin = await createTempRepo({ files });
  const cache = await createTempDir('ws-cache');
  const manager = createWorkspaceManager({ cacheDir: cache.path, reuse, gitEnv: testGitEnv() });
  return {
    origin,
    cache,
    manager,
    dispose: async () => {
      await cache.dispose();
      await origin.dispose();
    },
  };
}

/** True when `path` exists (file or directory). */
export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** The sample project most tests use. */
export const sampleFiles: Record<string, string> = {
  'README.md': '# sample\n',
  'package.json': '{ "name": "sample" }\n',
  'src/index.js': 'export const answer = 42;\n',
  'src/util.js': 'export const twice = (x) => 2 * x;\n',
  'docs/guide.md': '# guide\n',
  'docs/api/reference.md': '# reference\n',
  'secrets/prod.key': 'do-not-read\n',
  'config/.env': 'TOKEN=secret\n',
  '.gitignore': 'node_modules/\ndist/\n',
};
