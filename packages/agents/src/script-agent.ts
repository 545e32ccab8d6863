import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CodefleetError } from '@codefleet/core';
import type { Agent } from './port.js';
import { createProcessAgent } from './process-agent.js';

/** Options for {@link createScriptAgent}. */
export interface ScriptAgentOptions {
  /**
   * The script: an absolute path, a `file:` URL, or a package name resolved from this
   * package (relative paths are the config loader's job: it resolves them first).
   */
  module: string;
  /** The node binary; default the one running this process. */
  nodePath?: string;
  /** Recorded agent name; default `script`. */
  name?: string;
  /** Configured per-run timeout, reported as {@link Agent.timeoutMs}. */
  timeoutMs?: number;
  killGraceMs?: number;
  tailBytes?: number;
}

/**
 * Turns `module` into an absolute file path.
 *
 * @throws {CodefleetError} `invalid_config` for a relative path or a package that does not resolve.
 */
export function resolveScriptModule(module: string, configPath = 'agents.script.module'): string {
  if (isAbsolute(module)) return module;
  if (module.startsWith('file:')) return fileURLToPath(module);
  if (module.startsWith('.')) {
    throw new CodefleetError(
      'invalid_config',
      `${configPath}: relative path ${module} must be resolved to an absolute path first`,
      {
        details: { path: configPath, module },
      },
    );
  }
  try {
    return fileURLToPath(import.meta.resolve(module));
  } catch (cause) {
    throw new CodefleetError('invalid_config', `${configPath}: cannot resolve module ${module}`, {
      cause,
      details: { path: configPath, module },
    });
  }
}

/**
 * The `script` adapter, for the demo and tests: runs a JS module that edits files, as
 *
 *     node <module> --workdir <dir> --prompt-file <file> --pass <implement|test> --attempt <n> [--feedback-file <file>]
 *
 * (`--feedback-file` only when there is feedback), through the same process runner as
 * every other adapter: cwd is the workdir, stdin closed, `req.env` only, the tree killed on
 * timeout or abort, the same honest outcomes. The script reports success with exit 0 and
 * failure with a non-zero exit code; see `test/fixtures/edit-file.mjs` for an example.
 *
 * @throws {CodefleetError} `invalid_config` when the module cannot be resolved.
 */
export function createScriptAgent(options: ScriptAgentOptions): Agent {
  const modulePath = resolveScriptModule(options.module);
  // process.execPath is the running binary, not an environment read.
  const node = options.nodePath ?? process.execPath;
  return createProcessAgent({
    name: options.name ?? 'script',
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.killGraceMs === undefined ? {} : { killGraceMs: options.killGraceMs }),
    ...(options.tailBytes === undefined ? {} : { tailBytes: options.tailBytes }),
    argv: (req, files) => [
      node,
      modulePath,
      '--workdir',
      req.workdir,
      '--prompt-file',
      files.promptFile,
      '--pass',
      req.pass,
      '--attempt',
      String(req.attempt),
      ...(req.feedback ? ['--feedback-file', files.feedbackFile] : []),
    ],
  });
}
