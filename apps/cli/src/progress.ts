import { formatDuration } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import type { JobContext } from '@codefleet/pipeline';

type Progress = Parameters<NonNullable<JobContext['onProgress']>>[0];

/** Where and how a {@link progressReporter} shows progress. */
export interface ProgressOptions {
  /** The terminal (or not) the status line goes to; default `process.stderr`. */
  stream?: Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean; columns?: number };
  /** Off a terminal, progress goes here as `job.progress` lines (masked like every log line). */
  log?: Logger;
  /** Masks secrets in output shown on the terminal. */
  mask?: (text: string) => string;
  /** How often the status line is redrawn (TTY); default 1 s. */
  redrawMs?: number;
  /** How often a `job.progress` line is logged during a long step (no TTY); default 15 s. */
  logEveryMs?: number;
  now?: () => number;
}

/** What the worker wires into the pipeline, and `flush` to show the state now. */
export interface ProgressReporter {
  onProgress: (p: Progress) => void;
  onOutput: (source: string, chunk: string) => void;
  flush: () => void;
  done: () => void;
}

/** Longest last output line shown; the terminal's width cuts it further. */
const maxLineChars = 400;
/** Output kept to find the last line in. */
const maxRawChars = 8_192;

/** What both displays read: the job's progress so far and the running step's output. */
interface ProgressState {
  now: () => number;
  mask: (text: string) => string;
  jobStarted: number;
  current: Progress | undefined;
  step: { source: string; started: number; partial: string; last: string } | undefined;
}

/**
 * Shows where a running job is. On a TTY: one status line, redrawn every second, with the
 * stage, pass, attempt, the running step (agent or check) and how long it has run, the
 * job's elapsed time and the step's last output line. Off a terminal: a `job.progress` log
 * line at each stage change and every `logEveryMs` during a long step. The output line is
 * attacker data: escape sequences and control characters are removed before it is shown.
 */
export function progressReporter(options: ProgressOptions = {}): ProgressReporter {
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? Date.now;
  const state: ProgressState = {
    now,
    mask: options.mask ?? ((text: string) => text),
    jobStarted: now(),
    current: undefined,
    step: undefined,
  };
  return stream.isTTY ? terminalReporter(state, stream, options) : logReporter(state, options);
}

/** Off a terminal: a `job.progress` line at each stage change and every `logEveryMs` during a long step. */
function logReporter(state: ProgressState, options: ProgressOptions): ProgressReporter {
  const { now } = state;
  const fields = () => ({
    event: 'job.progress',
    ...(state.current
      ? {
          stage: state.current.stage,
          ...(state.current.pass ? { pass: state.current.pass } : {}),
          ...(state.current.innerAttempt ? { inner_attempt: state.current.innerAttempt } : {}),
        }
      : {}),
    elapsed_ms: now() - state.jobStarted,
    ...(state.step ? { step: state.step.source, step_ms: now() - state.step.started, last_line: lastLine(state) } : {}),
  });
  const flush = () => {
    const { current, step } = state;
    if (current)
      options.log?.info(
        fields(),
        `${current.stage}${step ? ` · ${step.source} ${formatDuration(now() - step.started)}` : ''}`,
      );
  };
  const timer = setInterval(() => {
    if (state.step) flush();
  }, options.logEveryMs ?? 15_000);
  timer.unref();
  return {
    onProgress: (p) => {
      enterProgress(state, p);
      flush();
    },
    onOutput: (source, chunk) => recordOutput(state, source, chunk),
    flush,
    done: () => clearInterval(timer),
  };
}

/** On a terminal: one status line, redrawn in place every `redrawMs` and ended with a newline when done. */
function terminalReporter(
  state: ProgressState,
  stream: NonNullable<ProgressOptions['stream']>,
  options: ProgressOptions,
): ProgressReporter {
  let shown = false;
  const flush = () => {
    if (!state.current) return;
    stream.write(`\r\x1b[2K${statusLine(state, stream.columns)}`);
    shown = true;
  };
  const timer = setInterval(flush, options.redrawMs ?? 1_000);
  timer.unref();
  return {
    onProgress: (p) => {
      enterProgress(state, p);
      flush();
    },
    onOutput: (source, chunk) => recordOutput(state, source, chunk),
    flush,
    done: () => {
      clearInterval(timer);
      if (shown) stream.write('\n');
      shown = false;
    },
  };
}

/** The terminal's status line, cut to one row of `columns`. */
function statusLine(state: ProgressState, columns: number | undefined): string {
  const { current, step, now } = state;
  if (!current) return '';
  const parts = [`[${current.stage}]`];
  if (current.pass) parts.push(`pass ${current.pass}`);
  if (current.innerAttempt) parts.push(`attempt ${current.innerAttempt}`);
  if (step) parts.push(`${step.source} ${formatDuration(now() - step.started)}`);
  parts.push(`job ${formatDuration(now() - state.jobStarted)}`);
  const head = parts.join(' · ');
  const last = lastLine(state);
  const line = last === '' ? head : `${head} · ${last}`;
  // One row: a wrapped line cannot be redrawn in place.
  // A pseudo-terminal without a size says 0 columns.
  const width = Math.max(20, (columns ? columns : 80) - 1);
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** A new stage (or pass, or attempt): the step before it has ended, and a new job restarts the clock. */
function enterProgress(state: ProgressState, p: Progress): void {
  if (state.current === undefined || isNewJob(state.current, p)) state.jobStarted = state.now();
  state.current = p;
  state.step = undefined;
}

/** Keeps the running step's last output line; a chunk from another source starts a new step. */
function recordOutput(state: ProgressState, source: string, chunk: string): void {
  if (state.step?.source !== source) state.step = { source, started: state.now(), partial: '', last: '' };
  const step = state.step;
  // Bounded: only the tail of the output can hold the last line.
  const lines = (step.partial + chunk).slice(-maxRawChars).split(/\r\n|\r|\n/);
  step.partial = lines.pop() ?? '';
  const complete = lines.filter((line) => sanitizeLine(line) !== '');
  if (complete.length > 0) step.last = complete[complete.length - 1]!;
}

/** The step's last output line, masked before it is cut, so a secret at the cut is still found whole. */
function lastLine(state: ProgressState): string {
  const { step } = state;
  if (!step) return '';
  const line = sanitizeLine(step.partial) !== '' ? step.partial : step.last;
  return sanitizeLine(state.mask(line));
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
