// Fields shown in the line prefix or too noisy for a terminal.
const PREFIX_KEYS = new Set(['time', 'level', 'msg', 'name', 'pid', 'hostname']);

/**
 * Renders one pino JSON line as `time LEVEL [name] msg key=value ...` for a terminal, with an
 * error's stack on the following lines. Lines that are not JSON objects pass through, so
 * nothing is ever dropped. A stand-in for pino-pretty that needs no dependency.
 */
export function formatPretty(line: string): string {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return `${line.trimEnd()}\n`;
  const fields = record as Record<string, unknown>;

  const head = [oneLine(text(fields.time)), oneLine(text(fields.level)).toUpperCase().padEnd(5)];
  if (fields.name !== undefined) head.push(`[${oneLine(text(fields.name))}]`);
  if (fields.msg !== undefined) head.push(oneLine(text(fields.msg)));
  const pairs: string[] = [];
  const stacks: string[] = [];
  for (const [key, value] of Object.entries(fields)) {
    if (PREFIX_KEYS.has(key)) continue;
    pairs.push(`${oneLine(key)}=${oneLine(renderValue(value))}`);
    const stack = isRecord(value) ? value.stack : undefined;
    if (typeof stack === 'string')
      stacks.push(
        stack
          .split('\n')
          .map((line) => `    ${oneLine(line)}`)
          .join('\n'),
      );
  }
  return `${[...head, ...pairs].filter((part) => part !== '').join(' ')}\n${stacks.map((s) => `${s}\n`).join('')}`;
}

/**
 * `value` with every control character written as an escape (`\x1b`, `\n`): log fields carry
 * what agents and repositories wrote, and on a terminal a raw escape sequence could rewrite
 * the screen, hide lines or fake others.
 */
function oneLine(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) =>
    c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function renderValue(value: unknown): string {
  if (isRecord(value) && typeof value.message === 'string' && typeof value.stack === 'string') {
    return JSON.stringify(value.message);
  }
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}
