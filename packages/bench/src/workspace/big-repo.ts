/**
 * The benchmark's large repository: ≥ 25 000 files and ≥ 300 MB of tree, generated with
 * `git fast-import` (adding and committing 300 MB through the index takes many times
 * longer) into the directory the caller gives, outside any repository, and reused there
 * while its layout is the same.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Shape of the generated repository; bump `version` when it changes so caches regenerate. */
const layout = {
  version: 1,
  packages: 40,
  modulesPerPackage: 13,
  filesPerModule: 50,
  minBytes: 1_024,
  maxBytes: 24_576,
};

/** The generated repository. */
export interface BigRepo {
  /** Bare repository to clone from. */
  path: string;
  files: number;
  treeBytes: number;
}

/** Returns the repository under `root`, generating it first when missing or of an older layout. */
export async function ensureBigRepo(env: Record<string, string>, root: string): Promise<BigRepo> {
  const marker = join(root, 'ready.json');
  const path = join(root, 'origin.git');
  try {
    const ready = JSON.parse(await readFile(marker, 'utf8')) as BigRepo & { version: number };
    if (ready.version === layout.version) return { path, files: ready.files, treeBytes: ready.treeBytes };
  } catch {
    // not generated yet
  }
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  await run(['git', 'init', '--quiet', '--bare', '--initial-branch=main', path], root, env);
  const stats = await fastImport(path, env);
  await writeFile(marker, JSON.stringify({ version: layout.version, ...stats }));
  return { path, ...stats };
}

async function fastImport(repo: string, env: Record<string, string>): Promise<{ files: number; treeBytes: number }> {
  const child = spawn('git', ['fast-import', '--quiet', '--done'], {
    cwd: repo,
    env,
    stdio: ['pipe', 'inherit', 'inherit'],
  });
  const exited = once(child, 'exit');
  const write = async (chunk: string | Buffer) => {
    if (!child.stdin.write(chunk)) await once(child.stdin, 'drain');
  };
  // A small deterministic PRNG for sizes, so every generated repository has the same shape.
  let seed = 42;
  const nextSize = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return layout.minBytes + (seed % (layout.maxBytes - layout.minBytes));
  };
  const paths: string[] = [];
  let treeBytes = 0;
  const add = async (path: string, content: Buffer) => {
    paths.push(path);
    await write(`blob\nmark :${paths.length}\ndata ${content.length}\n`);
    await write(content);
    await write('\n');
    treeBytes += content.length;
  };

  await add(
    'package.json',
    Buffer.from('{ "name": "bench-monorepo", "private": true, "scripts": { "test": "node -e 0" } }\n'),
  );
  await add('.gitignore', Buffer.from('node_modules/\ndist/\n'));
  await add('README.md', Buffer.from('# Generated benchmark repository\n'));
  for (let p = 0; p < layout.packages; p += 1) {
    for (let m = 0; m < layout.modulesPerPackage; m += 1) {
      for (let f = 0; f < layout.filesPerModule; f += 1) {
        await add(`packages/pkg-${p}/src/module-${m}/file-${f}.ts`, sourceLike(nextSize()));
      }
    }
  }
  const message = 'Generated benchmark tree\n';
  await write(
    `commit refs/heads/main\ncommitter Bench <bench@codefleet.invalid> 1700000000 +0000\ndata ${message.length}\n${message}`,
  );
  for (const [i, path] of paths.entries()) await write(`M 100644 :${i + 1} ${path}\n`);
  await write('\ndone\n');
  child.stdin.end();
  const [code] = (await exited) as [number | null];
  if (code !== 0) throw new Error(`git fast-import failed with exit ${code}`);
  return { files: paths.length, treeBytes };
}

/**
 * Comment lines of random base64: text like source code, but barely compressible, so the
 * pack is nearly as large as the tree and neither clone nor checkout gets an easy win.
 */
function sourceLike(bytes: number): Buffer {
  const text = randomBytes(Math.ceil((bytes * 3) / 4))
    .toString('base64')
    .slice(0, bytes);
  const lines = text.match(/.{1,76}/g) ?? [];
  return Buffer.from(`${lines.map((line) => `// ${line}`).join('\n')}\n`);
}

async function run(argv: string[], cwd: string, env: Record<string, string>): Promise<void> {
  const [file, ...args] = argv;
  const child = spawn(file ?? 'git', args, { cwd, env, stdio: 'inherit' });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${argv.join(' ')} failed with exit ${code}`);
}
