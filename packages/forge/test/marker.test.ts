import { describe, expect, it } from '@jest/globals';
import { checkMarker, parseMarker, pushedMarker, pushedShaOf, renderMarked } from '../src/index.js';

describe('comment markers', () => {
  it('round-trip through a hidden first line', () => {
    const stored = renderMarked('status', 'done\n<!-- codefleet:other -->');
    expect(stored).toBe('<!-- codefleet:status -->\ndone\n<!-- codefleet:other -->');
    expect(parseMarker(stored)).toBe('status');
    expect(parseMarker('<!-- codefleet:run/42:pass-1 -->\r\nbody')).toBe('run/42:pass-1');
    expect(parseMarker('<!-- codefleet:only -->')).toBe('only');
  });

  it('read the first line only, exactly', () => {
    expect(parseMarker('text\n<!-- codefleet:status -->')).toBeUndefined();
    expect(parseMarker(' <!-- codefleet:status -->\nx')).toBeUndefined();
    expect(parseMarker('<!-- renovate:status -->\nx')).toBeUndefined();
    expect(parseMarker('')).toBeUndefined();
  });

  it('refuse markers that could end the comment or span lines', () => {
    for (const bad of ['', 'a b', 'a-->', '--><script>', 'x\ny', 'é', 'x'.repeat(101)]) {
      expect(() => checkMarker(bad)).toThrow(expect.objectContaining({ code: 'forge_rejected' }));
    }
    expect(() => checkMarker('a.b_c:d/e-f')).not.toThrow();
  });
});

describe('the pushed marker of a pull request body', () => {
  const sha = 'a'.repeat(40);
  it('is read from the last line only', () => {
    expect(pushedShaOf(`Fixes #1\n\n${pushedMarker(sha)}\n`)).toBe(sha);
    // Quoted further up (an issue's text in the task note): not the record.
    expect(pushedShaOf(`${pushedMarker(sha)}\nmore text`)).toBeUndefined();
    expect(pushedShaOf('')).toBeUndefined();
    expect(() => pushedMarker('HEAD')).toThrow(expect.objectContaining({ code: 'forge_rejected' }));
  });
});
