// The image's runtime stage holds runtime code only. Read statically (no container engine
// here): what the Dockerfile's last stage copies, the workspaces infra/container's script
// lists for it, and, over the built output this package's test run has already built, that
// nothing copied names test code as a dependency or imports it.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dockerfile = readFileSync(join(root, 'infra/container/Dockerfile'), 'utf8');
// Each listing is read once: the checks of every workspace ask for it (one node start each).
const listings = new Map<'manifests' | 'files', readonly string[]>();
const listed = (what: 'manifests' | 'files'): string[] => {
  if (!listings.has(what))
    listings.set(
      what,
      execFileSync(process.execPath, ['infra/container/runtime-workspaces.mjs', what], { cwd: root, encoding: 'utf8' })
        .split('\n')
        .filter((line) => line !== ''),
    );
  return [...listings.get(what)!];
};

/** Workspaces and modules that only tests and benchmarks may use. */
const testOnly = ['@codefleet/testkit', '@codefleet/bench', '@codefleet/chaos', '@jest/globals', 'jest', 'ts-jest'];
const isTestCode = (specifier: string) =>
  testOnly.includes(specifier) || /^(fast-check|jest|@jest\/[^/]+|ts-jest)(\/|$)/.test(specifier);

/** The instructions of the Dockerfile's stages, by stage, continuation lines joined. */
function stages(text: string): string[][] {
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const result: string[][] = [];
  for (const instruction of instructions) {
    if (instruction.startsWith('FROM ')) result.push([]);
    result.at(-1)?.push(instruction);
  }
  return result;
}

/** Every `.js` file under `dir`. */
function jsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return jsFiles(path);
    return path.endsWith('.js') ? [path] : [];
  });
}

/**
 * The module specifiers a built file imports: `import 'x'`, `import … from 'x'`,
 * `export … from 'x'` at the start of a line (as the transpiler writes them) and `import('x')`.
 */
function importsOf(source: string): string[] {
  const pattern =
    /^\s*import\s*['"]([^'"]+)['"]|^\s*(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;
  return [...source.matchAll(pattern)].map((match) => match[1] ?? match[2] ?? match[3] ?? '');
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

describe('the image runtime stage', () => {
  const [, , runtime] = stages(dockerfile);

  it('copies only the runtime workspaces from the other stages', () => {
    const copies = (runtime ?? []).filter((instruction) => instruction.startsWith('COPY '));
    expect(copies).toEqual(['COPY --from=manifests /runtime-manifests/ ./', 'COPY --from=build /out/ ./']);
    expect(dockerfile).toContain('$(node infra/container/runtime-workspaces.mjs manifests) /runtime-manifests/');
    expect(dockerfile).toContain(
      'cp --parents -r $(node infra/container/runtime-workspaces.mjs files) config.yaml /out/',
    );
  });

  it('lists the CLI and its runtime workspaces, and none of the test-only ones', () => {
    const folders = listed('manifests').map((manifest) => dirname(manifest));
    expect(folders).toContain('apps/cli');
    expect(folders).toContain('packages/dashboard');
    expect(folders).not.toContain('packages/testkit');
    expect(folders).not.toContain('packages/bench');
    expect(folders).not.toContain('packages/chaos');
    expect(listed('files')).toEqual(expect.arrayContaining(['apps/cli/dist', 'packages/dashboard/assets']));
  });

  it.each(listed('manifests').map((manifest) => dirname(manifest)))(
    '%s depends on no test code and imports none in what is copied',
    (folder) => {
      const manifest = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')) as {
        name: string;
        dependencies?: Record<string, string>;
      };
      const dependencies = Object.keys(manifest.dependencies ?? {});
      expect(dependencies.filter(isTestCode)).toEqual([]);

      const copied = listed('files').filter((path) => path.startsWith(`${folder}/`));
      const files = copied.flatMap((path) => jsFiles(join(root, path)));
      expect(files.length).toBeGreaterThan(0);
      // Every bare import must be installed by `npm ci --omit=dev`: a node builtin, the package
      // itself, or one of its dependencies. Test code is none of these, and neither is a
      // development dependency that would be missing in the image.
      const builtins = new Set(builtinModules);
      const stray = files.flatMap((file) =>
        importsOf(readFileSync(file, 'utf8'))
          .filter((specifier) => !specifier.startsWith('.') && !specifier.startsWith('node:'))
          .map(packageOf)
          .filter((name) => !builtins.has(name) && name !== manifest.name && !dependencies.includes(name))
          .map((name) => `${file.slice(root.length)} imports ${name}`),
      );
      expect(stray).toEqual([]);
      // A relative import stays inside what is copied (never into a test/ folder, say).
      const roots = listed('files').map((path) => join(root, path));
      const outside = files.flatMap((file) =>
        importsOf(readFileSync(file, 'utf8'))
          .filter((specifier) => specifier.startsWith('.'))
          .map((specifier) => resolve(dirname(file), specifier))
          .filter((target) => !roots.some((copiedRoot) => target.startsWith(`${copiedRoot}/`)))
          .map((target) => target.slice(root.length)),
      );
      expect(outside).toEqual([]);
    },
  );
});
