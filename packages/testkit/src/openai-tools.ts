/** A tool a Responses request offers the model: its name, kind, and the namespace it sits in. */
export interface OfferedTool {
  name: string;
  /** `function`, `custom` (free-form input), `web_search`, … */
  type: string;
  namespace?: string;
}

function collect(tools: unknown, into: OfferedTool[], namespace?: string): void {
  if (!Array.isArray(tools)) return;
  for (const tool of tools as Record<string, unknown>[]) {
    if (tool.type === 'namespace') {
      collect(tool.tools, into, String(tool.name ?? ''));
      continue;
    }
    into.push({
      name: String(tool.name ?? tool.type ?? ''),
      type: String(tool.type ?? ''),
      ...(namespace === undefined ? {} : { namespace }),
    });
  }
}

/**
 * Every tool a Responses request body offers: its `tools`, and those Codex sends as an
 * `additional_tools` input item (its "code mode", where one free-form `exec` tool runs
 * JavaScript that calls the others), namespaces flattened.
 */
export function offeredTools(body: Record<string, unknown>): OfferedTool[] {
  const tools: OfferedTool[] = [];
  collect(body.tools, tools);
  if (Array.isArray(body.input)) {
    for (const item of body.input as Record<string, unknown>[]) {
      if (item.type === 'additional_tools') collect(item.tools, tools);
    }
  }
  return tools;
}

/** An apply_patch patch that adds `path` holding `content` (the format Codex's apply_patch reads). */
export function addFilePatch(path: string, content: string): string {
  const lines = content.endsWith('\n') ? content.slice(0, -1).split('\n') : content.split('\n');
  return ['*** Begin Patch', `*** Add File: ${path}`, ...lines.map((line) => `+${line}`), '*** End Patch', ''].join(
    '\n',
  );
}

/**
 * The output item (without id and call_id) of a model that creates `path` with the tools
 * offered, as Codex's models do, first match wins:
 * - code mode (a free-form `exec` tool): JavaScript calling `tools.apply_patch(patch)`;
 * - an `apply_patch` tool: the patch (free-form input, or `{ input }` for a function);
 * - `exec_command`: the shell command `apply_patch <<'EOF' … EOF`, which Codex intercepts;
 * - `shell`: `["apply_patch", patch]`.
 * @throws when the request offers none of them: the scripted test would be meaningless.
 */
export function editItem(tools: readonly OfferedTool[], path: string, content: string): Record<string, unknown> {
  const patch = addFilePatch(path, content);
  const named = (name: string) => tools.find((tool) => tool.name === name);
  const exec = named('exec');
  if (exec?.type === 'custom')
    return {
      type: 'custom_tool_call',
      name: 'exec',
      input: `const result = await tools.apply_patch(${JSON.stringify(patch)});\ntext(result);\n`,
    };
  const applyPatch = named('apply_patch');
  if (applyPatch?.type === 'custom') return { type: 'custom_tool_call', name: 'apply_patch', input: patch };
  if (applyPatch !== undefined)
    return { type: 'function_call', name: 'apply_patch', arguments: JSON.stringify({ input: patch }) };
  if (named('exec_command') !== undefined)
    return {
      type: 'function_call',
      name: 'exec_command',
      arguments: JSON.stringify({ cmd: `apply_patch <<'EOF'\n${patch}EOF\n` }),
    };
  if (named('shell') !== undefined)
    return { type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['apply_patch', patch] }) };
  throw new Error(`stand-in: the request offers no edit tool (offered: ${tools.map((tool) => tool.name).join(', ')})`);
}
