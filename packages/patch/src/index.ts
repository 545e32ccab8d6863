// Public API of @codefleet/patch: parse a patch, then apply it inside a workspace.
export { parsePatch, maxPatchChars } from './parse.js';
export { applyPatch, patchSucceeded, type ApplyOptions, type ApplyResult, type CommandResult } from './apply.js';
export { PatchParseError } from './errors.js';
export { defaultProtected, isProtected, PathRefused, resolveInside } from './paths.js';
export {
  fileActions,
  gitActions,
  type FileAction,
  type GitAction,
  type ParsedPatch,
  type PatchCommand,
  type PatchFormat,
  type TextEdit,
} from './types.js';
