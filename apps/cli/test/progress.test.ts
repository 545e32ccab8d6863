import { describe, expect, it } from '@jest/globals';
import { createLogger } from '@codefleet/log';
import { sanitizeLine } from '@codefleet/worker';
import { progressReporter } from '../src/progress.js';

/** A stream that records writes; a clock moved by hand (no timing in the assertions). */
function terminal(isTTY: boolean) {
  const writes: string[] = [];
  let t = 1_000_000;
  return {
    writes,
    stream: { isTTY, columns: 100, write: (s: string) => writes.push(s) > 0 },
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

// eslint-disable-next-line no-control-regex
const controls = /[\u0000-\u001f\u007f-\u009f]/;

describe('progress on a terminal', () => {
  it('one status line: stage, pass, attempt, the step and its time, the job time, the last output line', () => {
    const tty = terminal(true);
    const progress = progressReporter({ stream: tty.stream, now: tty.now, redrawMs: 3_600_000 });
    progress.onProgress({ stage: 'implementing', pass: 'implement', innerAttempt: 2 });
    tty.advance(3_000);
    progress.onOutput('agent', 'reading files\nediting src/calc.js\n');
    tty.advance(62_000);
    progress.flush();
    expect(tty.writes.at(-1)).toBe(
      '\r\x1b[2K[implementing] · pass implement · attempt 2 · agent 1m 02s · job 1m 05s · editing src/calc.js',
    );
    // A partial line (no newline yet) is the latest thing said.
    progress.onOutput('agent', 'running np');
    progress.flush();
    expect(tty.writes.at(-1)).toMatch(/ · running np$/);
    progress.done();
    expect(tty.writes.at(-1)).toBe('\n');
  });

  it('agent output cannot drive the terminal: escapes and control characters are removed, the line is bounded', () => {
    const tty = terminal(true);
    const progress = progressReporter({
      stream: tty.stream,
      now: tty.now,
      redrawMs: 3_600_000,
      mask: (s) => s.replaceAll('hunter2secret', '***'),
    });
    progress.onProgress({ stage: 'testing' });
    progress.onOutput(
      'test',
      `ok\n\x1b]0;owned title\x07\x1b[2J\x1b[1A\x9b31mred\x1b[0m \u202eevil\x08\x08 hunter2secret ${'x'.repeat(300)}\n`,
    );
    const shown = () => {
      progress.flush();
      const line = tty.writes.at(-1)!;
      expect(line.startsWith('\r\x1b[2K')).toBe(true);
      const text = line.slice('\r\x1b[2K'.length);
      expect(text).not.toMatch(controls);
      expect(text).not.toMatch(/[\u202a-\u202e]/);
      expect(text.length).toBeLessThan(100);
      return text;
    };
    expect(shown()).toMatch(/^\[testing\] · test 0ms · job 0ms · red evil \*\*\* x+…$/);
    // A line longer than anything kept is bounded too.
    progress.onOutput('test', 'y'.repeat(20_000));
    expect(shown()).toMatch(/^\[testing\] · test 0ms · job 0ms · y+…$/);
  });

  it('sanitizeLine strips OSC, CSI and lone escapes', () => {
    expect(sanitizeLine('\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[38;5;196mC\x1b(B \x1bcD')).toBe('link C D');
  });
});

describe('progress off a terminal', () => {
  it('logs job.progress lines: at each stage, and during a long step with the step and its last line', () => {
    const lines: string[] = [];
    const log = createLogger({ destination: { write: (s: string) => lines.push(s) } });
    const off = terminal(false);
    const progress = progressReporter({ stream: off.stream, log, now: off.now, logEveryMs: 3_600_000 });
    progress.onProgress({ stage: 'testing', pass: 'test', innerAttempt: 1 });
    off.advance(20_000);
    progress.onOutput('test', 'tests 12 passed\n\x1b[31mtests 1 failed\x1b[0m\n');
    progress.flush();
    progress.done();
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toMatchObject([
      { event: 'job.progress', stage: 'testing', pass: 'test', inner_attempt: 1, elapsed_ms: 0 },
      {
        event: 'job.progress',
        stage: 'testing',
        step: 'test',
        step_ms: 0,
        last_line: 'tests 1 failed',
        elapsed_ms: 20_000,
      },
    ]);
    expect(off.writes).toEqual([]);
  });

  it('a job after a cancelled or failed one counts its time from its own start', () => {
    const lines: string[] = [];
    const log = createLogger({ destination: { write: (s: string) => lines.push(s) } });
    const off = terminal(false);
    const progress = progressReporter({ stream: off.stream, log, now: off.now, logEveryMs: 3_600_000 });
    progress.onProgress({ stage: 'preparing' });
    progress.onProgress({ stage: 'implementing', pass: 'implement', innerAttempt: 1 });
    // Cancelled mid-agent: no `done` is reported; the next job starts a minute later.
    off.advance(60_000);
    progress.onProgress({ stage: 'preparing' });
    off.advance(250);
    progress.onProgress({ stage: 'planning' });
    progress.done();
    const elapsed = lines.map((l) => (JSON.parse(l) as { elapsed_ms: number }).elapsed_ms);
    expect(elapsed).toEqual([0, 0, 0, 250]);
  });
});
