#!/usr/bin/env node
// The `codefleet` command npm links into node_modules/.bin (so `npx codefleet` works from the
// repository root). Committed, not built: `npm ci` runs before the build, and npm links and
// marks executable only a file that exists then. It loads the built CLI, or says how to build it.
const entry = new URL('../dist/bin/codefleet.js', import.meta.url);
try {
  await import(entry.href);
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('dist/bin/codefleet.js')) throw error;
  process.stderr.write('codefleet is not built yet: run `npm run build` (or `npm run demo`) in the repository first\n');
  process.exitCode = 1;
}
