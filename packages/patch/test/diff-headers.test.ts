import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { captureProcess } from '@codefleet/process';
import { createTempDir, gitTestEnv, type TempDir } from '@codefleet/testkit';
import { DiffUnreadable, readDiff } from '../src/diff-headers.js';

const paths = (diff: string) => readDiff(diff).map((f) => f.paths);

describe('readDiff: the names git apply reads', () => {
  it('git headers: quoted names with every C escape, renames (both spellings), copies, binary patches', () => {
    expect(
      paths(
        [
          'diff --git "a/\\056env" "b/\\056env"',
          'new file mode 100644',
          '--- /dev/null',
          '+++ "b/\\056env"',
          '@@ -0,0 +1 @@',
          '+x',
        ].join('\n'),
      ),
    ).toEqual([['.env']]);
    expect(
      paths(['diff --git "a/t\\tb\\\\c\\"d\\n" "a/t\\tb\\\\c\\"d\\n"', 'deleted file mode 100644'].join('\n')),
    ).toEqual([['t\tb\\c"d\n']]);
    expect(paths(['diff --git a/x b/y', 'rename old x', 'rename new "\\303\\251t\\303\\251"'].join('\n'))).toEqual([
      ['x', 'été'],
    ]);
    expect(
      paths(
        [
          'diff --git a/x b/y',
          'similarity index 90%',
          'copy from x',
          'copy to sub/y',
          '--- a/x',
          '+++ b/sub/y',
          '@@ -1 +1 @@',
          '-a',
          '+b',
        ].join('\n'),
      ),
    ).toEqual([['x', 'sub/y']]);
    const binary = [
      'diff --git a/k.key b/k.key',
      'index 1111111..2222222 100644',
      'GIT binary patch',
      'literal 3',
      'KcmZQzWC8#H2LJ>B',
      '',
      'literal 4',
      'LcmZQzWM%;X01*HQ',
      '',
      '',
    ];
    expect(readDiff([...binary, 'diff --git a/n b/n', 'deleted file mode 100644'].join('\n'))).toEqual([
      { oldPath: 'k.key', newPath: 'k.key', paths: ['k.key'], modes: ['100644'], binary: 'patch' },
      { oldPath: 'n', paths: ['n'], modes: ['100644'] },
    ]);
  });

  it('traditional headers: timestamps cut, -p guessed from the first header and kept, hunks counted (a --- inside is content)', () => {
    expect(
      paths(
        [
          '--- a/my file.txt\t2010-07-05 19:41:17.620000023 -0500',
          '+++ b/my file.txt\t2010-07-05 19:41:18 -0500',
          '@@ -1 +1 @@',
          '-a',
          '+b',
        ].join('\n'),
      ),
    ).toEqual([['my file.txt']]);
    const guessed = [
      '--- README',
      '+++ README',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      '--- b/evil',
      '+++ b/evil',
      '@@ -0,0 +1,2 @@',
      '+-- not/a/header',
      '++++ nor/this',
      '',
    ].join('\n');
    expect(paths(guessed)).toEqual([['README'], ['b/evil']]);
    expect(readDiff('--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+x\n')).toEqual([
      { newPath: 'new', paths: ['new'], modes: [] },
    ]);
  });

  it('where git versions read a diff --git line differently (a space ending a directory), both readings are checked', () => {
    // git 2.44 takes ` /\t` from the diff --git line and then refuses the +++ line; git 2.39 reads ` /` from it.
    const funny = [
      'diff --git a/ /\t b/ /\t',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/ /\t',
      '@@ -0,0 +1 @@',
      '+x',
    ].join('\n');
    expect(paths(funny)).toEqual([[' /']]);
  });

  it('what git refuses, and what the checker cannot follow, throws; prose alone is no patch', () => {
    expect(() => readDiff('@@ -1 +1 @@\n-a\n+b\n')).toThrow(DiffUnreadable);
    expect(() => readDiff('diff --git a/x b/y\nold mode 100644\nnew mode 100755\n')).toThrow(/without file names/);
    expect(() => readDiff('--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n+b\n')).toThrow(/corrupt patch/);
    expect(() =>
      readDiff('diff --git a/x b/x\nnew file mode 100644\ndeleted file mode 100644\n--- /dev/null\n'),
    ).toThrow(/inconsistent/);
    expect(() => readDiff('diff --git "a/\\377" "b/\\377"\ndeleted file mode 100644\n')).toThrow(/not UTF-8/);
    expect(() => readDiff('--- a/x\0\n+++ b/x\n@@ -0,0 +1 @@\n+x\n')).toThrow(/NUL/);
    expect(readDiff('Here is my change, I hope you like it.\n--- end\n')).toEqual([]);
  });
});

describe('readDiff agrees with git apply --numstat (property, git as the oracle)', () => {
  let dir: TempDir;
  // Outside any repository: numstat only reads the diff.
  const env = { ...gitTestEnv(), PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
  beforeAll(async () => {
    dir = await createTempDir('diff-oracle');
  });
  afterAll(async () => {
    await dir.dispose();
  });

  const gitNames = async (file: string, reverse: boolean, strip: number | undefined): Promise<string[] | undefined> => {
    const p = strip === undefined ? [] : [`-p${strip}`];
    const run = await captureProcess(['git', 'apply', '--numstat', '-z', ...p, ...(reverse ? ['-R'] : []), file], {
      cwd: dir.path,
      env: { ...env, GIT_CEILING_DIRECTORIES: dir.path },
    });
    if (run.exitCode !== 0) return undefined;
    return run.stdout
      .split('\0')
      .filter(Boolean)
      .map((r) => r.split('\t').slice(2).join('\t'));
  };

  // With no -p (git's default and its guess) and with the -p0 / -p1 the engine passes.
  it('every name git would write is among the names the checker read; the checker refuses only what git refuses', async () => {
    const name = fc
      .array(fc.constantFrom('a', 'b', '/', '.', ' ', '\t', '"', '\\', 'é', 'env', 'x'), { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(''));
    const quote = (n: string) =>
      `"${[...Buffer.from(n, 'utf8')].map((b) => (b < 0x20 || b > 0x7e ? `\\${b.toString(8).padStart(3, '0')}` : b === 0x22 || b === 0x5c ? `\\${String.fromCharCode(b)}` : String.fromCharCode(b))).join('')}"`;
    const shown = fc
      .tuple(name, fc.boolean(), fc.constantFrom('', 'a/', 'b/', '/'))
      .map(([n, q, prefix]) => (q ? quote(prefix + n) : prefix + n));
    const stamp = fc.constantFrom(
      '',
      '',
      '\t2010-07-05 19:41:17 +0000',
      '\t1970-01-01 00:00:00 +0000',
      ' 2010-07-05 19:41:17',
    );
    const modify = fc.constantFrom(
      '@@ -1 +1 @@\n-a\n+b',
      '@@ -1,2 +1,2 @@\n--- a\n-b\n+++ c\n+d',
      '@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b',
    );
    const binary = 'GIT binary patch\nliteral 3\nKcmZQzWC8#H2LJ>B\n';
    const hunk = fc.oneof(
      modify,
      fc.constantFrom('@@ -0,0 +1 @@\n+x', '@@ -1 +0,0 @@\n-a', binary, 'Binary files a/x and b/x differ', ''),
    );
    // Mostly coherent headers, as git writes them (each kind of file change), some chaos.
    const kinds: Record<string, { ext: string[]; from: 0 | 2; to: 0 | 2; body: fc.Arbitrary<string> }> = {
      modify: { ext: [], from: 0, to: 0, body: modify },
      mode: {
        ext: ['old mode 100644', 'new mode 100755'],
        from: 0,
        to: 0,
        body: fc.constantFrom('', '@@ -1 +1 @@\n-a\n+b'),
      },
      index: { ext: ['index 1111111..2222222 100644'], from: 0, to: 0, body: fc.oneof(modify, fc.constant(binary)) },
      create: { ext: ['new file mode 100644'], from: 2, to: 0, body: fc.constantFrom('', '@@ -0,0 +1 @@\n+x', binary) },
      remove: { ext: ['deleted file mode 100644'], from: 0, to: 2, body: fc.constantFrom('', '@@ -1 +0,0 @@\n-a') },
      rename: {
        ext: ['similarity index 90%', 'rename from', 'rename to'],
        from: 0,
        to: 0,
        body: fc.oneof(modify, fc.constant('')),
      },
      copy: { ext: ['copy from', 'copy to'], from: 0, to: 0, body: fc.oneof(modify, fc.constant('')) },
      renameOld: { ext: ['rename old', 'rename new'], from: 0, to: 0, body: fc.constant('') },
    };
    const anyOf = [
      'old mode 100644',
      'new mode 100755',
      'deleted file mode 100644',
      'new file mode 100644',
      'similarity index 90%',
      'rename from',
      'rename to',
      'copy from',
      'copy to',
      'rename old',
      'rename new',
      'index 1111111..2222222 100644',
    ];
    const chaos = fc
      .tuple(fc.subarray(anyOf), fc.constantFrom<0 | 1 | 2>(0, 1, 2), fc.constantFrom<0 | 1 | 2>(0, 1, 2), hunk)
      .map(([ext, from, to, body]) => ({ ext, from, to, body }));
    const plan = fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .constantFrom(...Object.values(kinds))
          .chain(({ body, ...k }) => body.map((b) => ({ ...k, body: b }))),
      },
      { weight: 1, arbitrary: chaos },
    );
    const gitBlock = fc
      .tuple(name, name, fc.boolean(), fc.boolean(), fc.constantFrom('b/', 'b/', 'a/', ''), plan, fc.boolean())
      .map(([n, m, same, q, prefix, { ext, from, to, body }, names]) => {
        const second = same ? n : m;
        const show = (side: string, value: string) => (q ? quote(side + value) : side + value);
        const lines = [`diff --git ${show('a/', n)} ${show(prefix, second)}`];
        for (const e of ext)
          lines.push(/ (from|to|old|new)$/.test(e) ? `${e} ${show('', /(from|old)$/.test(e) ? n : second)}` : e);
        const side = (which: 0 | 1 | 2, prefix: string, value: string, other: string) =>
          which === 2 ? '/dev/null' : show(prefix, which === 0 ? value : other);
        if (names || (body.startsWith('@@') && !ext.some((e) => /^(rename|copy)/.test(e))))
          lines.push(`--- ${side(from, 'a/', n, second)}`, `+++ ${side(to, 'b/', second, n)}`);
        if (body) lines.push(body);
        return lines.join('\n');
      });
    const traditional = fc
      .tuple(shown, shown, fc.boolean(), stamp, stamp, fc.integer({ min: 0, max: 3 }))
      .map(([n, m, same, s1, s2, dev]) =>
        [
          `--- ${dev === 1 ? '/dev/null' : n}${s1}`,
          `+++ ${dev === 2 ? '/dev/null' : same ? n : m}${s2}`,
          dev === 1 ? '@@ -0,0 +1 @@\n+x' : dev === 2 ? '@@ -1 +0,0 @@\n-a' : '@@ -1 +1 @@\n-a\n+b',
        ].join('\n'),
      );
    const line: fc.Arbitrary<string> = fc.oneof(
      { weight: 3, arbitrary: gitBlock },
      { weight: 2, arbitrary: traditional },
      {
        weight: 1,
        arbitrary: fc.constantFrom('prose', '-- x', '@@ -1 +1 @@', 'diff --git', '\\ No newline at end of file'),
      },
    );
    const file = join(dir.path, 'd.diff');
    let compared = 0;
    const strips = fc.constantFrom(undefined, 0, 1);
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 4 }), strips, async (lines, strip) => {
        const diff = `${lines.join('\n')}\n`;
        await writeFile(file, diff);
        const forward = await gitNames(file, false, strip);
        const reverse = await gitNames(file, true, strip);
        let ours: string[];
        try {
          ours = readDiff(diff, strip === undefined ? {} : { strip }).flatMap((f) => f.paths);
        } catch (error) {
          if (!(error instanceof DiffUnreadable)) throw error;
          // Refused, so never applied; and only where git refuses too (`--numstat` does
          // not check for a patch with only garbage, `git apply` does).
          if (!/only garbage/.test(error.message)) expect(forward).toBeUndefined();
          return;
        }
        if (forward === undefined || reverse === undefined) return;
        compared += 1;
        for (const n of [...forward, ...reverse]) expect(ours).toContain(n);
        // ORACLE_RUNS=4000 for a longer search after changing the port.
      }),
      { numRuns: Number(process.env.ORACLE_RUNS ?? 300) },
    );
    // The generator must reach diffs git reads, or the property says little.
    expect(compared).toBeGreaterThan(50);
    // About 1,800 git processes: minutes on a loaded 2-core machine. The timeout guards against a hang only.
  }, 600_000);
});
