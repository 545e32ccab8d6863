import { formatDuration } from '@codefleet/core';
import type { Logger } from '@codefleet/log';
import { JobProgress, sanitizeLine, type Progress } from '@codefleet/worker';

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

/** What both displays read: the job's progress so far and the running step's output. */
interface ProgressState {
  now: () => number;
  mask: (text: string) => string;
  job: JobProgress;
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
  const state: ProgressState = { now, mask: options.mask ?? ((text: string) => text), job: new JobProgress(now) };
  return stream.isTTY ? terminalReporter(state, stream, options) : logReporter(state, options);
}

/** Off a terminal: a `job.progress` line at each stage change and every `logEveryMs` during a long step. */
function logReporter(state: ProgressState, options: ProgressOptions): ProgressReporter {
  const { now } = state;
  const fields = () => ({
    event: 'job.progress',
    ...(state.job.current
      ? {
          stage: state.job.current.stage,
          ...(state.job.current.pass ? { pass: state.job.current.pass } : {}),
          ...(state.job.current.innerAttempt ? { inner_attempt: state.job.current.innerAttempt } : {}),
        }
      : {}),
    elapsed_ms: now() - state.job.jobStarted,
    ...(state.job.step
      ? { step: state.job.step.source, step_ms: now() - state.job.step.started, last_line: lastLine(state) }
      : {}),
  });
  const flush = () => {
    const { current, step } = state.job;
    if (current)
      options.log?.info(
        fields(),
        `${current.stage}${step ? ` · ${step.source} ${formatDuration(now() - step.started)}` : ''}`,
      );
  };
  const timer = setInterval(() => {
    if (state.job.step) flush();
  }, options.logEveryMs ?? 15_000);
  timer.unref();
  return {
    onProgress: (p) => {
      state.job.enter(p);
      flush();
    },
    onOutput: (source, chunk) => state.job.output(source, chunk),
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
    if (!state.job.current) return;
    stream.write(`\r\x1b[2K${statusLine(state, stream.columns)}`);
    shown = true;
  };
  const timer = setInterval(flush, options.redrawMs ?? 1_000);
  timer.unref();
  return {
    onProgress: (p) => {
      state.job.enter(p);
      flush();
    },
    onOutput: (source, chunk) => state.job.output(source, chunk),
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
  const { now } = state;
  const { current, step } = state.job;
  if (!current) return '';
  const parts = [`[${current.stage}]`];
  if (current.pass) parts.push(`pass ${current.pass}`);
  if (current.innerAttempt) parts.push(`attempt ${current.innerAttempt}`);
  if (step) parts.push(`${step.source} ${formatDuration(now() - step.started)}`);
  parts.push(`job ${formatDuration(now() - state.job.jobStarted)}`);
  const head = parts.join(' · ');
  const last = lastLine(state);
  const line = last === '' ? head : `${head} · ${last}`;
  // One row: a wrapped line cannot be redrawn in place.
  // A pseudo-terminal without a size says 0 columns.
  const width = Math.max(20, (columns ? columns : 80) - 1);
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** The step's last output line, masked and made safe to print. */
function lastLine(state: ProgressState): string {
  return sanitizeLine(state.job.tail(state.mask).at(-1) ?? '');
}
