import { graphemePrefix } from '@codefleet/core';
import { cleanLine } from './patterns.js';

/** Characters of one line that are matched and kept; the rest of a longer line is dropped. */
const maxLineChars = 2000;
/** Marker appended to a line cut at {@link maxLineChars}. */
const lineCutMarker = ' …[line truncated]';

/**
 * Splits output that arrives in pieces (cut anywhere) into lines, and hands each one on
 * capped at 2000 characters and cleaned of colour and progress output ({@link cleanLine}).
 * Only the current line is held, never more than the cap: a 50 MB log, or one endless
 * line, costs linear time and constant memory.
 */
export class LineReader {
  private pending = '';
  /** The pending line already exceeded the cap: drop input until its newline. */
  private overlong = false;

  constructor(private readonly onLine: (line: string) => void) {}

  /** Feeds the next piece of output; pieces may split lines anywhere. */
  write(chunk: string): void {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
      const line = this.overlong ? this.pending : this.pending + chunk.slice(start, nl);
      this.pending = '';
      this.overlong = false;
      this.emit(line);
      start = nl + 1;
    }
    if (start < chunk.length && !this.overlong) {
      this.pending += chunk.slice(start);
      // Keep a bounded prefix: appending forever to one endless line would be quadratic.
      if (this.pending.length > maxLineChars) {
        this.pending = `${graphemePrefix(this.pending, maxLineChars)}${lineCutMarker}`;
        this.overlong = true;
      }
    }
  }

  /** Ends the input: a last line without a newline counts. */
  end(): void {
    if (this.pending !== '') this.emit(this.pending);
    this.pending = '';
    this.overlong = false;
  }

  private emit(raw: string): void {
    const capped = raw.length > maxLineChars ? `${graphemePrefix(raw, maxLineChars)}${lineCutMarker}` : raw;
    this.onLine(cleanLine(capped));
  }
}
