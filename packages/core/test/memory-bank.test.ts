import { describe, expect, it } from '@jest/globals';
import { isMemoryFile } from '../src/memory-bank.js';

describe('isMemoryFile', () => {
  it('accepts plain .md names directly under .codefleet/memory/', () => {
    expect(isMemoryFile('.codefleet/memory/conventions.md')).toBe(true);
    expect(isMemoryFile('.codefleet/memory/sub/a.md')).toBe(false);
    expect(isMemoryFile('.codefleet/task.md')).toBe(false);
    expect(isMemoryFile('.codefleet/memory/a.txt')).toBe(false);
  });
});
