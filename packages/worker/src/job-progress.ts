import type { JobContext } from '@codefleet/pipeline';

/** What the pipeline reports at each stage, pass and inner attempt (JobContext.onProgress). */
export type Progress = Parameters<NonNullable<JobContext['onProgress']>>[0];

/** Longest output line kept; a longer one is cut. */
const maxLineChars = 400;
/** Output kept to find the last lines in. */
const maxRawChars = 8_192;

/** The step running now: its source, when its output began and its last lines. */
export interface StepOutput {
  /** `agent`, or a check: `install`, `build`, `format`, `lint`, `test`, `dod`, `baseline build`… */
  source: string;
  /** Epoch ms of its first output. */
  started: number;
  /** The line being written (no newline yet). */
  partial: string;
  /** Its last complete lines that say something, oldest first, at most the tracker's `keepLines`. */
  lines: string[];
}

/**
 * Where a running job is, from the pipeline's own reports (JobContext.onProgress and
 * onOutput): the stage, pass and attempt, the running step and its last output lines. The
 * CLI's status line and the worker's registry entry (which the dashboard shows) both read
 * one of these, so they say the same. Output is kept raw (bounded): whoever shows it
 * sanitizes it, and masks secrets in it.
 */
export class JobProgress {
  jobStarted: number;
  current: Progress | undefined;
  step: StepOutput | undefined;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly keepLines = 1,
  ) {
    this.jobStarted = now();
  }

  /** A new stage (or pass, or attempt): the step before it has ended, and a new job restarts the clock. */
  enter(p: Progress): void {
    if (this.current === undefined || isNewJob(this.current, p)) this.jobStarted = this.now();
    this.current = p;
    this.step = undefined;
  }

  /** Keeps the running step's last lines; a chunk from another source starts a new step. */
  output(source: string, chunk: string): void {
    if (this.step?.source !== source) this.step = { source, started: this.now(), partial: '', lines: [] };
    const step = this.step;
    // Bounded: only the tail of the output can hold the last lines.
    const lines = (step.partial + chunk).slice(-maxRawChars).split(/\r\n|\n/);
    step.partial = lines.pop() ?? '';
    const complete = lines.map(lastRedraw).filter((line) => sanitizeLine(line) !== '');
    if (complete.length > 0) step.lines = [...step.lines, ...complete].slice(-this.keepLines);
  }

  /**
   * The step's last lines that say something, oldest first, the line being written included;
   * `[]` between steps. Each is masked, then cut to a bound (so a secret at the cut is still
   * found whole). Raw otherwise: escape sequences are kept.
   */
  tail(mask: (text: string) => string = (text) => text): string[] {
    const { step } = this;
    if (!step) return [];
    const partial = lastRedraw(step.partial);
    const lines = sanitizeLine(partial) === '' ? step.lines : [...step.lines, partial].slice(-this.keepLines);
    return lines.map((line) => mask(line).slice(0, maxLineChars));
  }
}

/** What a line shows once its carriage returns have redrawn it (a progress bar): the last non-empty part. */
function lastRedraw(line: string): string {
  const parts = line.split('\r').filter((part) => part !== '');
  return parts[parts.length - 1] ?? '';
}

/**
 * A job (or an outer attempt) after the last one: every attempt starts by preparing its
 * working copy. Only a success reports `done`, so a job that was cancelled or failed must
 * not leave its elapsed time to the next one.
 */
function isNewJob(previous: Progress, next: Progress): boolean {
  return next.stage === 'preparing'
    ? previous.stage !== 'preparing'
    : previous.stage === 'done' && next.stage !== 'done';
}

/**
 * One line of agent or check output made safe to print on a terminal: escape sequences
 * (CSI, OSC and the rest) and every other control or bidirectional-override character are
 * removed, whitespace runs collapse, and the line is bounded.
 */
export function sanitizeLine(line: string): string {
  return (
    line
      // OSC (…BEL or …ST), then CSI, then any other ESC sequence.
      // eslint-disable-next-line no-control-regex
      .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, '')
      // eslint-disable-next-line no-control-regex
      .replace(/(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?/g, '')
      // eslint-disable-next-line no-control-regex
      .replace(/\x1b[ -/]*[0-~]?/g, '')
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, maxLineChars)
  );
}
