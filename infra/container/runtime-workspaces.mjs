#!/usr/bin/env node
// What the image's runtime stage holds of the workspaces: the CLI, which is the image's entry
// point, and every workspace it reaches through `dependencies`. A workspace only a test or a
// benchmark needs (testkit, bench, chaos) is reached through `devDependencies` alone, so it
// stays out of the image. Prints one path per line, for the Dockerfile to copy:
//   manifests  each such workspace's package.json (what `npm ci --omit=dev` reads);
//   files      each such workspace's `files` entries (dist/, and bin/ or assets/ where listed).
// apps/cli/test/container-image.test.ts checks that nothing copied imports test code.
//
// Usage, from the repository root: node infra/container/runtime-workspaces.mjs manifests|files
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const what = process.argv[2];
if (what !== 'manifests' && what !== 'files') {
  console.error('usage: node infra/container/runtime-workspaces.mjs manifests|files');
  process.exit(2);
}
const entry = 'apps/cli';
const folders = ['apps', 'packages'].flatMap((parent) =>
  readdirSync(parent)
    .map((name) => join(parent, name))
    .filter((folder) => existsSync(join(folder, 'package.json'))),
);
const manifests = new Map(
  folders.map((folder) => [folder, JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'))]),
);
const folderOf = new Map([...manifests].map(([folder, manifest]) => [manifest.name, folder]));

const reached = new Set([entry]);
for (const folder of reached) {
  for (const name of Object.keys(manifests.get(folder)?.dependencies ?? {})) {
    const dependency = folderOf.get(name);
    if (dependency !== undefined) reached.add(dependency);
  }
}
const paths = [...reached]
  .sort()
  .flatMap((folder) =>
    what === 'manifests'
      ? [join(folder, 'package.json')]
      : (manifests.get(folder).files ?? []).map((f) => join(folder, f)),
  );
console.log(paths.join('\n'));
