// The tests' TypeScript transform: TypeScript's transpileModule (type errors are the `typecheck`
// task's job), to ES modules for jest's --experimental-vm-modules. It replaces ts-jest, whose
// cache key holds the file's absolute path and the package's root: each of CI's three Node
// lines runs in a checkout of its own, so every line transpiled every file again, and each
// jest worker loaded TypeScript just to compute cache keys. Here the key is the source, the
// file's name and the settings, TypeScript is loaded only on a cache miss, and jest.preset.js
// gives each package a cache name of its own that does not depend on where the checkout is.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const load = createRequire(import.meta.url);

// The tsconfig.base.json settings that change what is emitted, with the module kind jest's
// ES module loader takes (NodeNext emits by the nearest package.json; every workspace is
// "type": "module"). isolatedModules and verbatimModuleSyntax keep each file's imports as written.
const compilerOptions = {
  target: 'ES2022',
  module: 'ESNext',
  moduleResolution: 'Bundler',
  esModuleInterop: true,
  isolatedModules: true,
  verbatimModuleSyntax: true,
  resolveJsonModule: true,
  sourceMap: true,
};

const tsVersion = JSON.parse(readFileSync(load.resolve('typescript/package.json'), 'utf8')).version;
const settingsKey = createHash('sha1')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(tsVersion)
  .digest('hex');

let ts;

export default {
  getCacheKey(source, filename) {
    return createHash('sha1')
      .update(settingsKey)
      .update('\0')
      .update(basename(filename))
      .update('\0')
      .update(source)
      .digest('hex');
  },
  process(source, filename) {
    ts ??= load('typescript');
    const { outputText, sourceMapText, diagnostics } = ts.transpileModule(source, {
      fileName: filename,
      compilerOptions: ts.convertCompilerOptionsFromJson(compilerOptions, '').options,
      reportDiagnostics: true,
    });
    // transpileModule reports syntax errors only: a file that does not parse fails its suite
    // here, saying where, as it would under the build.
    const errors = (diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (errors.length > 0) throw new Error(ts.formatDiagnostics(errors, formatHost));
    return { code: outputText.replace(/\n\/\/# sourceMappingURL=.*$/, ''), map: sourceMapText };
  },
};

const formatHost = {
  getCanonicalFileName: (name) => name,
  getCurrentDirectory: () => process.cwd(),
  getNewLine: () => '\n',
};
