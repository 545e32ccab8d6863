import { describe, expect, it } from '@jest/globals';
import {
  addAgentRun,
  addVerification,
  advance,
  finish,
  newRun,
  setAcceptanceCriteria,
  setMemoryUpdates,
  setPublication,
  startAttempt,
  type RunRecord,
  type Stage,
} from '@codefleet/core';
import { renderTaskNote } from '../src/task-note.js';
import { agentRunFixture, fixtureTime as at, jobFixture, verificationFixture } from '@codefleet/testkit';

function started(overrides: Record<string, unknown> = {}): RunRecord {
  let run = newRun(jobFixture(overrides), { runId: 'run-1', now: at(0) });
  run = startAttempt(run, { workerId: 'mini-1', now: at(1) });
  return run;
}

function advanced(run: RunRecord, path: readonly Stage[]): RunRecord {
  return path.reduce((r, stage, i) => advance(r, stage, { now: at(10 + i) }), run);
}

/** Cells of the table rows that start with `| <first>`, split on unescaped pipes. */
function rowCells(note: string, first: string): string[][] {
  return note
    .split('\n')
    .filter((line) => line.startsWith(`| ${first} |`))
    .map((line) => line.split(/(?<!\\)\|/).slice(1, -1));
}

/** Top-level fenced blocks: [opening fence, content]. Fails on an unclosed block. */
function fencedBlocks(note: string): [string, string][] {
  const blocks: [string, string][] = [];
  let open: string | undefined;
  let content: string[] = [];
  for (const line of note.split('\n')) {
    const fence = /^(`{3,})/.exec(line)?.[1];
    if (open === undefined) {
      if (fence !== undefined) {
        open = fence;
        content = [];
      }
    } else if (line === open || (fence !== undefined && fence.length >= open.length && line.trim() === fence)) {
      blocks.push([open, content.join('\n')]);
      open = undefined;
    } else {
      content.push(line);
    }
  }
  expect(open).toBeUndefined();
  return blocks;
}

describe('renderTaskNote', () => {
  it('renders a run with no agent runs or verification', () => {
    const note = renderTaskNote(newRun(jobFixture(), { runId: 'run-1', now: at(0) }));
    expect(note.startsWith('# Add a health endpoint\n\nFixes #7\n')).toBe(true);
    expect(note).toContain('| Outcome | in progress (queued) |');
    expect(note).toContain('| Requested by | alice via issue #7 |');
    expect(note).toContain('## Timeline');
    expect(note).not.toContain('## Agent runs');
    expect(note).not.toContain('## Failure logs');
  });

  it('renders a full run', () => {
    let run = advanced(started(), ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing']);
    run = setAcceptanceCriteria(run, ['GET /healthz returns 200', 'documented in README'], { now: at(20) });
    run = addAgentRun(
      run,
      agentRunFixture({ outcome: 'failed', exit_code: 1, output_tail: 'error TS2304: Cannot find name' }),
      { now: at(21) },
    );
    run = addAgentRun(run, agentRunFixture({ inner_attempt: 2, changed_files: ['a.ts', 'b.ts'] }), { now: at(22) });
    run = addVerification(
      run,
      verificationFixture({
        step: 'lint',
        command: ['npm', 'run', 'lint'],
        passed: false,
        exit_code: 2,
        output_tail: 'no-unused-vars',
      }),
      { now: at(23) },
    );
    run = addVerification(run, verificationFixture(), { now: at(24) });
    run = finish(run, 'succeeded', { now: at(30), dodResult: 'passed' });
    const note = renderTaskNote(run);
    expect(note).toContain('| Outcome | succeeded |');
    expect(note).toContain('| DoD | passed |');
    expect(note).toContain('- [ ] GET /healthz returns 200');
    expect(rowCells(note, 'implement')).toEqual([
      [' implement ', ' 1.1 ', ' aider ', ' 1 ', ' – ', ' no ', ' 12s ', ' 1 ', ' failed '],
      [' implement ', ' 1.2 ', ' aider ', ' 0 ', ' – ', ' no ', ' 12s ', ' 2 ', ' changed '],
    ]);
    expect(rowCells(note, 'test')).toEqual([
      [' test ', ' 1.1 ', ' lint ', ' npm run lint ', ' 2 ', ' 4.0s ', ' **failed** '],
      [' test ', ' 1.1 ', ' test ', ' npm test ', ' 0 ', ' 4.0s ', ' passed '],
    ]);
    expect(rowCells(note, 'done')).toEqual([[' done ', ' 2024-05-01T10:00:30.000Z ', ' 1 ', ' – ']]);
    const blocks = fencedBlocks(note).map(([, content]) => content);
    expect(blocks).toEqual(['We need GET /healthz.', 'error TS2304: Cannot find name', 'no-unused-vars']);
  });

  it('does not link the pull request to itself: no row before it exists, "this one" after', () => {
    let run = advanced(started(), ['preparing', 'planning', 'implementing', 'testing', 'validating', 'publishing']);
    run = setPublication(run, { branch: 'ai/health' }, { now: at(20) });
    const before = renderTaskNote(finish(run, 'dod_failed', { now: at(21), dodResult: 'failed' }));
    expect(before).not.toContain('| Pull request |');
    expect(before).toContain('| Branch | ai/health |');
    run = setPublication(
      run,
      { branch: 'ai/health', pullRequest: { number: 12, head: 'ai/health', base: 'main', draft: true } },
      { now: at(22) },
    );
    const after = renderTaskNote(run);
    expect(rowCells(after, 'Pull request')).toEqual([[' Pull request ', ' this one (draft) ']]);
  });

  it('shows a skipped step as skipped with its reason, not as passed in 0ms', () => {
    let run = started();
    run = addVerification(
      run,
      verificationFixture({
        pass: 'implement',
        step: 'install',
        command: ['npm', 'ci'],
        exit_code: null,
        duration_ms: 0,
        passed: true,
        skipped: true,
        output_tail: 'node_modules matches the lockfile: install skipped',
      }),
      { now: at(5) },
    );
    run = addVerification(
      run,
      verificationFixture({ pass: 'implement', step: 'build', command: ['npm', 'run', 'build'] }),
      { now: at(6) },
    );
    const note = renderTaskNote(run);
    expect(rowCells(note, 'implement')).toEqual([
      [
        ' implement ',
        ' 1.1 ',
        ' install ',
        ' npm ci ',
        ' – ',
        ' – ',
        ' skipped: node\\_modules matches the lockfile: install skipped ',
      ],
      [' implement ', ' 1.1 ', ' build ', ' npm run build ', ' 0 ', ' 4.0s ', ' passed '],
    ]);
    expect(rowCells(note, 'Checks')).toEqual([[' Checks ', ' 1 passed, 1 skipped (latest run of each step) ']]);
    expect(note).not.toContain('0ms');
  });

  it('lists the files the run changed, each once, bounded with a count of the rest', () => {
    let run = started();
    run = addAgentRun(run, agentRunFixture({ changed_files: ['src/calc.js'] }), { now: at(5) });
    run = addAgentRun(run, agentRunFixture({ pass: 'test', changed_files: ['src/calc.js', 'test/calc_test.js'] }), {
      now: at(6),
    });
    expect(renderTaskNote(run)).toContain('## Changed files (2)\n\n- src/calc.js\n- test/calc\\_test.js\n');
    const many = addAgentRun(
      run,
      agentRunFixture({ changed_files: Array.from({ length: 60 }, (_, i) => `gen/f${String(i).padStart(2, '0')}.ts`) }),
      { now: at(7) },
    );
    const note = renderTaskNote(many);
    expect(note).toContain('## Changed files (62)\n\n- gen/f00.ts\n');
    expect(note).toContain('- gen/f49.ts\n\n_and 12 more files._');
    expect(note).not.toContain('gen/f50.ts');
    expect(renderTaskNote(started())).not.toContain('## Changed files');
  });

  it('tells a step that fails on the base commit too apart from passed and failed, in rows, counts and logs', () => {
    let run = started();
    run = addVerification(run, verificationFixture({ step: 'build', command: ['npm', 'run', 'build'] }), {
      now: at(5),
    });
    run = addVerification(
      run,
      verificationFixture({
        step: 'lint',
        command: ['npm', 'run', 'lint'],
        exit_code: 1,
        passed: false,
        preexisting: true,
        output_tail: 'src/old.js: no-var',
      }),
      { now: at(6) },
    );
    run = addVerification(run, verificationFixture({ exit_code: 1, passed: false, output_tail: 'FAIL calc' }), {
      now: at(7),
    });
    const note = renderTaskNote(run);
    expect(rowCells(note, 'test').map((row) => row[6])).toEqual([
      ' passed ',
      ' failing on the base commit too (pre-existing, not caused by this change) ',
      ' **failed** ',
    ]);
    expect(rowCells(note, 'Checks')).toEqual([
      [' Checks ', ' 1 passed, 1 failed, 1 failing on the base commit too (pre-existing) (latest run of each step) '],
    ]);
    expect(note).toContain(
      '**lint: npm run lint (test pass, attempt 1.1): failing on the base commit too (pre-existing, not caused by this change)**',
    );
    expect(note).toContain('**test: npm test (test pass, attempt 1.1)**');
    const fixed = renderTaskNote(addVerification(run, verificationFixture({ inner_attempt: 2 }), { now: at(8) }));
    expect(fixed).toContain('**test: npm test (test pass, attempt 1.1), passed later in attempt 1.2**');
  });

  it('links the issue from options, and not for chat jobs by default', () => {
    const chat = newRun(jobFixture({ source: { kind: 'chat', platform: 'slack', channel: 'C1', thread_id: 't' } }), {
      runId: 'r',
      now: at(0),
    });
    expect(renderTaskNote(chat)).not.toContain('Fixes');
    expect(renderTaskNote(chat, { issueRef: 'octo/repo#12' })).toContain('\nFixes octo/repo#12\n');
  });

  it('keeps a title with pipes, newlines, mentions and references on its line', () => {
    const run = started({ title: 'Fix | table\nFixes #99 ping @octocat <script>' });
    const note = renderTaskNote(run);
    const heading = note.split('\n')[0] ?? '';
    expect(heading).toBe('# Fix \\| table Fixes #&#8203;99 ping @&#8203;octocat &lt;script&gt;');
    expect(note).not.toMatch(/Fixes #99/);
    expect(note.split('\n')[2]).toBe('Fixes #7');
  });

  it('shows the model tokens of agents that count them, with the total; other notes keep their columns', () => {
    let run = started();
    run = addAgentRun(run, agentRunFixture({ agent: 'ollama', tokens: { prompt: 1200, completion: 300 } }), {
      now: at(5),
    });
    run = addAgentRun(
      run,
      agentRunFixture({ agent: 'ollama', pass: 'test', tokens: { prompt: 900, completion: 100 } }),
      { now: at(6) },
    );
    const note = renderTaskNote(run);
    expect(note).toMatch(/\| Outcome \| Tokens \|/);
    expect(note).toContain('| 1200 + 300 |');
    expect(note).toContain('Model tokens in all: 2500 (prompt + completion');
    const plain = renderTaskNote(addAgentRun(started(), agentRunFixture(), { now: at(5) }));
    expect(plain).not.toContain('Tokens');
  });

  it('does not let table cells break out', () => {
    let run = started();
    run = addVerification(run, verificationFixture({ command: ['sh', '-c', 'a | b\n| x | y |'], passed: true }), {
      now: at(5),
    });
    run = advance(run, 'preparing', { now: at(6), note: 'cell | break\nnew line' });
    const note = renderTaskNote(run);
    for (const [first, width] of [
      ['test', 7],
      ['preparing', 4],
    ] as const) {
      const rows = rowCells(note, first);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toHaveLength(width);
    }
    expect(note).toContain('sh -c a \\| b \\| x \\| y \\|');
  });

  it('fences bodies and logs that contain backtick fences', () => {
    const evil = 'before\n```\n# Injected heading\n````\n@everyone Fixes #1\n```';
    let run = started({ body: evil });
    run = addAgentRun(run, agentRunFixture({ outcome: 'error', output_tail: evil }), { now: at(5) });
    const note = renderTaskNote(run);
    const blocks = fencedBlocks(note);
    expect(blocks).toHaveLength(2);
    for (const [fence, content] of blocks) {
      expect(fence.length).toBeGreaterThan(4);
      expect(content).toBe(evil);
    }
    // The injected heading only exists inside the fences.
    const outside = note
      .split(blocks[0]?.[0] ?? '```')
      .filter((_, i) => i % 2 === 0)
      .join('');
    expect(outside).not.toContain('# Injected heading');
  });

  it('stays within the bound, trimming excerpts first', () => {
    let run = started({ body: 'b'.repeat(65_536), title: '@'.repeat(256) });
    run = setAcceptanceCriteria(
      run,
      Array.from({ length: 200 }, () => '|@#1'.repeat(100)),
      { now: at(2) },
    );
    for (let i = 1; i <= 200; i += 1) {
      const changed = Array.from({ length: 5 }, (_, k) => `${'|@#1'.repeat(100)}${i}-${k}`);
      run = addAgentRun(
        run,
        agentRunFixture({
          inner_attempt: i,
          outcome: 'failed',
          agent: 'a'.repeat(64),
          output_tail: `${'x'.repeat(8000)}END${i}`,
          changed_files: changed,
        }),
        { now: at(3) },
      );
      run = addVerification(
        run,
        verificationFixture({
          inner_attempt: i,
          passed: false,
          command: Array(50).fill('|@#1'),
          output_tail: `${'y'.repeat(8000)}END${i}`,
        }),
        { now: at(3) },
      );
    }
    for (let i = 0; i < 100; i += 1) {
      run = advance(run, 'preparing', { now: at(4), note: '|'.repeat(500) });
      run = advance(run, 'retry_wait', { now: at(4) });
      run = startAttempt(run, { workerId: 'w'.repeat(200), now: at(4) });
    }
    const note = renderTaskNote(run);
    expect(note.length).toBeLessThanOrEqual(60_000);
    expect(note).toContain('## Failure logs');
    expect(note).toContain('END200');
    expect(note).toContain('earlier rows omitted');
    expect(note).toContain('_and 950 more files._');
    fencedBlocks(note);
    const tiny = renderTaskNote(run, { maxChars: 5000 });
    expect(tiny.length).toBeLessThanOrEqual(5000);
    expect(tiny).not.toContain('## Failure logs');
    fencedBlocks(tiny);
  });
});

describe('renderTaskNote: memory bank', () => {
  it('gives proposed memory bank files their own section', () => {
    const run = setMemoryUpdates(started(), ['.codefleet/memory/pitfalls.md'], { now: at(2) });
    const note = renderTaskNote(run);
    expect(note).toContain('## Memory bank update proposed');
    expect(note).toContain('- .codefleet/memory/pitfalls.md');
    expect(renderTaskNote(started())).not.toContain('Memory bank');
  });
});
