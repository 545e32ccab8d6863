import { realpath } from 'node:fs/promises';
import type { LoadedConfig } from '@codefleet/config';
import type { Logger, SecretRegistry } from '@codefleet/log';
import type { PipelineDeps } from '@codefleet/pipeline';
import type { Requester } from '@codefleet/requester';
import type { Sandbox } from '@codefleet/sandbox';
import type { RunStore } from '@codefleet/store';
import type { WorkspaceManager } from '@codefleet/workspace';
import type { RuntimeForge } from './pipeline-deps.js';

/** What the parts loaded on first use take from the runtime that opened them. */
interface LazyInputs {
  loaded: LoadedConfig;
  log: Logger;
  secrets: SecretRegistry;
  store: RunStore;
  /** The environment of git calls (`gitEnvFrom`), made anew for each use. */
  gitEnv: () => Record<string, string>;
  sandbox: () => Promise<Sandbox>;
}

/** The runtime's parts that load on first use, so a worker waiting for jobs holds neither their code nor their connections. */
interface LazyParts {
  forge(): Promise<RuntimeForge>;
  requester(): Promise<Requester>;
  workspaces(): Promise<WorkspaceManager>;
  pipeline(): Promise<PipelineDeps>;
  /** Closes the forge if it was opened. */
  closeForge(): Promise<void>;
}

/** One value made on first call and kept; a failed attempt is not kept, the next call tries again. */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make().catch((error: unknown) => {
      made = undefined;
      throw error;
    });
    return made;
  };
}

/** The absolute, real path of the git on `path`; plain `git` when there is none (doctor says so). */
async function resolveGit(path: string | undefined): Promise<string> {
  const { findExecutable } = await import('@codefleet/process');
  const found = await findExecutable('git', '/', path);
  return found === undefined ? 'git' : realpath(found).catch(() => found);
}

/** Readies the forge, the requester, the working copies and the pipeline; none loads until asked for. */
export function lazyParts(inputs: LazyInputs): LazyParts {
  const { loaded, log, secrets, store } = inputs;
  const { config, env } = loaded;
  const deps = once(() => import('./pipeline-deps.js'));
  // git is looked up on PATH once, here: a `git` planted later in a PATH directory never
  // receives codefleet's calls (the push and its token among them).
  const gitPath = once(async () => resolveGit(env.PATH));
  let opened: RuntimeForge | undefined;
  const forgeAccess = once(async () => {
    const access = await (await deps()).openForge(loaded, inputs.gitEnv(), secrets, await gitPath());
    opened = access.forge;
    return access;
  });
  const workspaces = once(async () => {
    const { createWorkspaceManager } = await import('@codefleet/workspace');
    // Only GitHub needs credentials, and only the mirror's fetch uses them (the forge's
    // credential helper): git in a working copy an agent wrote runs without them.
    const gitEnv = inputs.gitEnv();
    const remoteGitEnv = config.forge.type === 'github' ? (await forgeAccess()).gitEnv : gitEnv;
    return createWorkspaceManager({
      cacheDir: config.workspace.cache_dir,
      reuse: config.workspace.reuse,
      gitEnv,
      remoteGitEnv,
      gitPath: await gitPath(),
    });
  });
  const requester = once(async () =>
    (await deps()).requesters(config, (await forgeAccess()).forge, log, secrets, store),
  );
  const pipeline = once(async () =>
    (await deps()).pipelineDeps(loaded, {
      forge: (await forgeAccess()).forge,
      requester: await requester(),
      workspaces: await workspaces(),
      sandbox: await inputs.sandbox(),
      store,
      log,
      secrets,
      gitPath: await gitPath(),
    }),
  );
  return {
    forge: async () => (await forgeAccess()).forge,
    requester,
    workspaces,
    pipeline,
    closeForge: async () => {
      await opened?.close?.();
    },
  };
}
