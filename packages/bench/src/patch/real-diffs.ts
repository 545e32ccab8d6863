/**
 * Real diffs through the patch engine, against plain `git apply`, on a local repository's
 * own history: `node dist/patch/real-diffs.js [--commits N] [--out DIR] [<repo>...]`
 * (`npm run bench`: codefleet's own history). Other projects are brought in as local
 * clones and never committed here; the diffs live only under DIR.
 *
 * For each repository, N commits (default 140: a quarter with renames, copies, mode changes
 * or binary files, the rest spread over the history; no merges, no submodules) are turned
 * into diffs in the forms people and tools pass around, written under DIR (default a temp
 * dir) so a failure can be looked at:
 *   git    `git diff -M parent commit`
 *   fp     `git format-patch -1 --stdout commit`
 *   ruN    `diff -ruN a b` of the files the commit changes
 * and two damaged as models damage them, made from the `git` form when it has a text hunk:
 *   count  the first hunk's old line count one off (up on even commits, down on odd ones)
 *   stale  the first hunk's first context line changed
 * Each diff is applied to a clean checkout of the parent twice, by `git apply` and by the
 * engine (`parsePatch` + `applyPatch` as `codefleet patch apply` runs them), and the tree
 * is compared with the commit's (content and modes). "silent" counts the engine's wrong
 * trees it reported as a success. Nothing of the repositories is kept outside DIR.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { applyPatch, parsePatch, patchSucceeded } from '@codefleet/patch';

const exec = promisify(execFile);
const forms = ['git', 'fp', 'ruN', 'count', 'stale'] as const;
type Form = (typeof forms)[number];

interface Case {
  repo: string;
  commit: string;
  parent: string;
  form: Form;
  file: string;
}
interface Outcome {
  git: boolean;
  engine: boolean;
  engineOk: boolean;
  engineError?: string;
}

const env: Record<string, string> = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: tmpdir(),
  LC_ALL: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@codefleet.invalid',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@codefleet.invalid',
};

/** Runs git (or another program) and returns stdout as bytes; `ok: false` keeps a failure's stderr. */
async function run(
  argv: string[],
  cwd: string,
  extra: Record<string, string> = {},
): Promise<{ ok: boolean; out: Buffer; err: string }> {
  try {
    const running = exec(argv[0] ?? 'git', argv.slice(1), {
      cwd,
      env: { ...env, ...extra },
      encoding: 'buffer',
      maxBuffer: 256 * 1024 * 1024,
    });
    running.child.stdin?.end();
    const { stdout, stderr } = await running;
    return { ok: true, out: stdout, err: stderr.toString('utf8') };
  } catch (error) {
    const e = error as { stdout?: Buffer; stderr?: Buffer; code?: number };
    return { ok: false, out: e.stdout ?? Buffer.alloc(0), err: e.stderr?.toString('utf8') ?? String(error) };
  }
}

async function git(cwd: string, args: string[], extra: Record<string, string> = {}): Promise<string> {
  const result = await run(['git', ...args], cwd, extra);
  if (!result.ok) throw new Error(`git ${args.join(' ')}: ${result.err.trim()}`);
  return result.out.toString('utf8');
}

interface Candidate {
  commit: string;
  parent: string;
  special: boolean;
}

/** Non-merge commits with at most 30 files and 3 000 changed lines, no submodule; `special`: renames, copies, modes, binaries. */
async function candidates(repo: string): Promise<Candidate[]> {
  const log = await git(repo, ['log', '--no-merges', '-M', '-C', '--raw', '--numstat', '--format=%x01%H %P']);
  const out: Candidate[] = [];
  for (const chunk of log.split('\x01').slice(1)) {
    const [head = '', ...lines] = chunk.split('\n');
    const [commit = '', parent, more] = head.trim().split(' ');
    if (parent === undefined || more !== undefined) continue;
    const raw = lines.filter((l) => l.startsWith(':'));
    const stats = lines.filter((l) => /^(\d+|-)\t(\d+|-)\t/.test(l));
    if (raw.length === 0 || raw.length > 30 || raw.some((l) => /\b160000\b/.test(l.split('\t')[0] ?? ''))) continue;
    const changed = stats.reduce(
      (sum, l) => sum + (Number(l.split('\t')[0]) || 0) + (Number(l.split('\t')[1]) || 0),
      0,
    );
    if (changed > 3000) continue;
    const special =
      raw.some((l) => {
        const [oldMode, newMode, , , status = ''] = l.slice(1).split('\t')[0]?.split(' ') ?? [];
        return /^[RC]/.test(status) || (oldMode !== '000000' && newMode !== '000000' && oldMode !== newMode);
      }) || stats.some((l) => l.startsWith('-\t-\t'));
    out.push({ commit, parent, special });
  }
  return out;
}

/** `count` evenly spread elements of `list`. */
const spread = <T>(list: T[], count: number): T[] =>
  list.length <= count
    ? list
    : Array.from({ length: count }, (_, i) => list[Math.floor((i * list.length) / count)] as T);

/** The first hunk of a `git diff`, damaged: its old count one off, or its first context line stale. */
function damage(diff: Buffer, form: 'count' | 'stale', up: boolean): Buffer | undefined {
  const text = diff.toString('latin1');
  const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/m.exec(text);
  if (header === null) return undefined;
  if (form === 'count') {
    const old = header[2] === undefined ? 1 : Number(header[2]);
    if (!up && old <= 1) return undefined;
    const fixed = `@@ -${header[1]},${up ? old + 1 : old - 1} +${header[3]}${header[4] === undefined ? '' : `,${header[4]}`} @@`;
    return Buffer.from(text.slice(0, header.index) + fixed + text.slice(header.index + header[0].length), 'latin1');
  }
  const body = header.index + header[0].length;
  const next = text.indexOf('\n', body) + 1;
  if (next === 0 || text[next] !== ' ') return undefined;
  return Buffer.from(`${text.slice(0, next)} stale: ${text.slice(next + 1)}`, 'latin1');
}

/** Writes the five diffs of `c` under `dir`; returns the cases made. */
async function makeDiffs(repo: string, name: string, c: Candidate, index: number, dir: string): Promise<Case[]> {
  const cases: Case[] = [];
  const save = async (form: Form, bytes: Buffer | undefined) => {
    if (bytes === undefined || bytes.length === 0) return;
    const file = join(dir, `${c.commit.slice(0, 12)}.${form}.diff`);
    await writeFile(file, bytes);
    cases.push({ repo: name, commit: c.commit, parent: c.parent, form, file });
  };
  const plain = (await run(['git', 'diff', '-M', c.parent, c.commit], repo)).out;
  await save('git', plain);
  await save('fp', (await run(['git', 'format-patch', '-1', '--stdout', c.commit], repo)).out);
  await save('ruN', await traditional(repo, c, dir));
  await save('count', damage(plain, 'count', index % 2 === 0));
  await save('stale', damage(plain, 'stale', true));
  return cases;
}

/** `diff -ruN a b` of the files `c` changes, checked out of both trees. */
async function traditional(repo: string, c: Candidate, dir: string): Promise<Buffer> {
  const work = await mkdtemp(join(dir, 'ruN-'));
  try {
    const raw = (await git(repo, ['diff-tree', '-r', '--no-renames', '-z', '--raw', c.parent, c.commit])).split('\0');
    const sides: Record<'a' | 'b', string[]> = { a: [], b: [] };
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const status = (raw[i] ?? '').split(' ')[4] ?? '';
      const path = raw[i + 1] ?? '';
      if (status !== 'A') sides.a.push(path);
      if (status !== 'D') sides.b.push(path);
    }
    for (const [side, commit] of [
      ['a', c.parent],
      ['b', c.commit],
    ] as const) {
      await mkdir(join(work, side));
      const index = { GIT_INDEX_FILE: join(work, `${side}.index`) };
      await git(repo, ['read-tree', commit], index);
      if (sides[side].length > 0)
        await git(repo, ['checkout-index', `--prefix=${join(work, side)}/`, '--', ...sides[side]], index);
    }
    return (await run(['diff', '-ruN', 'a', 'b'], work)).out;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * True when the work tree of `scratch` is exactly `commit`'s tree (content and modes). The
 * index starts from `parent`, so submodules (never checked out) stay as they were.
 */
async function exact(scratch: string, parent: string, commit: string): Promise<boolean> {
  const index = { GIT_INDEX_FILE: join(scratch, '.git', 'bench-index') };
  await git(scratch, ['read-tree', parent], index);
  await git(scratch, ['add', '-A', '-f'], index);
  return (
    (await git(scratch, ['write-tree'], index)).trim() ===
    (await git(scratch, ['rev-parse', `${commit}^{tree}`])).trim()
  );
}

async function reset(scratch: string, parent: string): Promise<void> {
  await git(scratch, ['reset', '-q', '--hard', parent]);
  await git(scratch, ['clean', '-qffdx']);
}

async function evaluate(scratch: string, c: Case): Promise<Outcome> {
  const bytes = await readFile(c.file);
  await reset(scratch, c.parent);
  const byGit = (await run(['git', 'apply', c.file], scratch)).ok && (await exact(scratch, c.parent, c.commit));
  await reset(scratch, c.parent);
  let engineOk = false;
  let engineError: string | undefined;
  try {
    const parsed = parsePatch(bytes);
    const result = await applyPatch(parsed.commands, { root: scratch, env });
    engineOk = patchSucceeded(parsed, result);
    engineError = result.results.find((r) => r.error !== undefined)?.error;
  } catch (error) {
    engineError = error instanceof Error ? error.message : String(error);
  }
  const byEngine = await exact(scratch, c.parent, c.commit);
  return { git: byGit, engine: byEngine, engineOk, ...(engineError === undefined ? {} : { engineError }) };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string) => {
    const at = args.indexOf(name);
    if (at === -1) return undefined;
    const [value] = args.splice(at, 2).slice(1);
    return value;
  };
  const perRepo = Number(option('--commits') ?? 140);
  const out = resolve(option('--out') ?? (await mkdtemp(join(tmpdir(), 'codefleet-real-diffs-'))));
  // No repository named: the one this runs in.
  if (args.length === 0) args.push((await git(process.cwd(), ['rev-parse', '--show-toplevel'])).trim());
  const tally = new Map<Form, { cases: number; git: number; engine: number; silent: number }>(
    forms.map((f) => [f, { cases: 0, git: 0, engine: 0, silent: 0 }]),
  );
  const failures: (Case & Outcome)[] = [];
  for (const repoArg of args) {
    const repo = resolve(repoArg);
    const name = basename(repo.replace(/\/(\.git|repo)$/, '')) || 'repo';
    const dir = join(out, name);
    const scratch = join(dir, 'work');
    await rm(dir, { recursive: true, force: true });
    await mkdir(join(dir, 'diffs'), { recursive: true });
    await git(dir, ['clone', '--quiet', '--no-checkout', '--shared', repo, scratch]);
    const all = await candidates(scratch);
    const special = spread(
      all.filter((c) => c.special),
      Math.floor(perRepo / 4),
    );
    const chosen = [
      ...special,
      ...spread(
        all.filter((c) => !c.special),
        perRepo - special.length,
      ),
    ];
    const cases: Case[] = [];
    for (const [i, c] of chosen.entries()) cases.push(...(await makeDiffs(scratch, name, c, i, join(dir, 'diffs'))));
    for (const c of cases) {
      const outcome = await evaluate(scratch, c);
      const t = tally.get(c.form);
      if (t === undefined) continue;
      t.cases += 1;
      if (outcome.git) t.git += 1;
      if (outcome.engine) t.engine += 1;
      if (!outcome.engine && outcome.engineOk) t.silent += 1;
      if (!outcome.engine || !outcome.engineOk) failures.push({ ...c, ...outcome });
    }
    console.log(
      `${name}: ${chosen.length} commits (${special.length} with renames, copies, modes or binaries), ${cases.length} diffs`,
    );
  }
  console.log('form    diffs  git apply  engine  engine wrong but exit 0');
  for (const [form, t] of tally)
    console.log(
      `${form.padEnd(6)} ${String(t.cases).padStart(6)} ${String(t.git).padStart(10)} ${String(t.engine).padStart(7)} ${String(t.silent).padStart(8)}`,
    );
  await writeFile(join(out, 'failures.json'), JSON.stringify(failures, null, 2));
  console.log(`diffs and failures.json in ${out}`);
}

await main();
