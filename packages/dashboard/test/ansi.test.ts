import { describe, expect, it } from '@jest/globals';
import { ansiHtml } from '../src/ansi.js';

describe('ansiHtml', () => {
  it('turns SGR colours and weights into spans with fixed classes, and resets them', () => {
    expect(ansiHtml('\x1b[32m✓ parses\x1b[0m done\n\x1b[1;91mFAIL\x1b[22m still red\x1b[39m plain').text).toBe(
      '<span class="ansi-fg-2">✓ parses</span> done\n<span class="ansi-fg-9 ansi-bold">FAIL</span><span class="ansi-fg-9"> still red</span> plain',
    );
    // 256-colour indexes below 16 are the standard ones; others and true colour show plain.
    expect(ansiHtml('\x1b[38;5;1mA\x1b[38;5;196mB\x1b[38;2;1;2;3mC\x1b[4mD').text).toBe(
      '<span class="ansi-fg-1">A</span>BC<span class="ansi-underline">D</span>',
    );
    expect(ansiHtml('\x1b[44m\x1b[mx').text).toBe('x');
  });

  it('escapes the text and drops every other escape sequence and control character', () => {
    const hostile =
      '<img src=x onerror=alert(1)>\x1b]0;owned title\x07\x1b]8;;javascript:alert(1)\x1b\\link\x1b]8;;\x1b\\' +
      '\x1b[2J\x1b[1A\x9b31m"red"\x1b(B\u202eevil\x08\x00 & \x1b[31';
    const out = ansiHtml(hostile).text;
    expect(out).toBe(
      '&lt;img src=x onerror=alert(1)&gt;link<span class="ansi-fg-1">&quot;red&quot;</span><span class="ansi-fg-1">evil &amp; </span>',
    );
    // eslint-disable-next-line no-control-regex
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
  });

  it('shows a line redrawn with carriage returns as it ended', () => {
    expect(ansiHtml('downloading 10%\rdownloading 80%\r\nnext\r\n').text).toBe('downloading 80%\nnext\n');
  });
});
