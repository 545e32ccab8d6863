import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { extractFeedback, feedbackFor, LogScanner, type StepResult } from '../src/index.js';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
// String.prototype.isWellFormed is ES2024; the base lib stops at ES2023.
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// Lines a real log is made of, so the generated logs hit every pattern and block kind.
const realisticLine = fc.constantFrom(
  '  ● Suite › adds numbers',
  '    ✕ adds numbers (3 ms)',
  '    ✓ passes (1 ms)',
  ' FAIL  test/a.test.ts',
  '    Expected: 3',
  '      at Object.<anonymous> (test/a.test.ts:4:13)',
  "src/a.ts(1,5): error TS2304: Cannot find name 'x'.",
  'src/a.ts:1:5 - error TS2304: Cannot find name.',
  'error[E0425]: cannot find value `c` in this scope',
  ' --> src/main.rs:1:37',
  '  |',
  './calc.go:3:9: undefined: c',
  '--- FAIL: TestAdd (0.00s)',
  'FAILED tests/test_a.py::test_b - assert 1 == 2',
  '____ test_b ____',
  'E       assert 1 == 2',
  '==== short test summary info ====',
  'test tests::it_adds ... FAILED',
  'not ok 1 - parses',
  '  ---',
  "  error: 'nope'",
  '  stack: |-',
  '2 failing',
  '  1) Suite',
  '       does things:',
  '/repo/src/b.js',
  '  1:7  error  x is unused  no-unused-vars',
  '  2:1  warning  debugger  no-debugger',
  '',
  '   ',
  '\x1b[31mred\x1b[0m',
  'progress 10%\rprogress 100%',
);
const anyLine = fc.oneof(
  realisticLine,
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 3000 }),
);
const log = fc.array(anyLine, { maxLength: 200 }).map((lines) => lines.join('\n'));
const budget = fc.integer({ min: 0, max: 6000 });

describe('extractFeedback properties', () => {
  it('never exceeds maxBytes, whatever the input', () => {
    fc.assert(
      fc.property(fc.oneof(log, fc.string({ unit: 'binary', maxLength: 20_000 })), budget, (text, maxBytes) => {
        expect(bytes(extractFeedback(text, maxBytes))).toBeLessThanOrEqual(maxBytes);
      }),
      { numRuns: 300 },
    );
  });

  it('introduces no broken characters: well-formed input gives well-formed output', () => {
    const wellFormed = fc.array(fc.oneof(realisticLine, fc.string({ unit: 'grapheme', maxLength: 3000 })), {
      maxLength: 50,
    });
    fc.assert(
      fc.property(wellFormed, budget, (lines, maxBytes) => {
        expect(loneSurrogate.test(extractFeedback(lines.join('\n'), maxBytes))).toBe(false);
      }),
    );
  });

  it('contains the first error line whole when it fits', () => {
    // Noise of lowercase words cannot look like a test name or an error.
    const noise = fc.array(fc.stringMatching(/^[a-z ]{0,80}$/), { maxLength: 300 });
    const message = fc.stringMatching(/^[A-Za-z' .]{1,200}$/);
    fc.assert(
      fc.property(noise, message, noise, fc.integer({ min: 0, max: 4096 }), (before, text, after, slack) => {
        const error = `src/app.ts(12,5): error TS2322: ${text}`;
        const maxBytes = bytes('First error:\n') + bytes(error) + slack;
        const feedback = extractFeedback([...before, error, ...after].join('\n'), maxBytes);
        expect(feedback.split('\n')).toContain(error);
      }),
    );
  });

  it('finds the same things whether the log arrives whole or in arbitrary pieces', () => {
    fc.assert(
      fc.property(fc.array(realisticLine, { maxLength: 100 }), fc.array(fc.nat(), { maxLength: 20 }), (lines, cuts) => {
        const text = lines.join('\n');
        const whole = new LogScanner();
        whole.write(text);
        const pieces = new LogScanner();
        let at = 0;
        for (const cut of [...cuts.map((c) => c % (text.length + 1))].sort((a, b) => a - b)) {
          pieces.write(text.slice(at, cut));
          at = cut;
        }
        pieces.write(text.slice(at));
        expect(pieces.end()).toEqual(whole.end());
      }),
    );
  });
});

describe('feedbackFor properties', () => {
  it('never exceeds maxBytes, header included', () => {
    const step = fc.record({
      name: fc.constantFrom('build', 'format', 'lint', 'test', 'dod', 'install'),
      command: fc.array(fc.string({ maxLength: 500 }), { minLength: 1, maxLength: 5 }),
      exitCode: fc.option(fc.integer({ min: 0, max: 255 })),
      signal: fc.option(fc.constantFrom('SIGKILL', 'SIGTERM')),
      timedOut: fc.boolean(),
      durationMs: fc.nat(),
      outputTail: log,
      passed: fc.constant(false),
    }) as fc.Arbitrary<StepResult>;
    fc.assert(
      fc.property(step, budget, (failed, maxBytes) => {
        const feedback = feedbackFor(failed, maxBytes);
        expect(bytes(feedback)).toBeLessThanOrEqual(maxBytes);
        if (maxBytes >= 400) expect(feedback.startsWith(`Step ${failed.name} failed (`)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
