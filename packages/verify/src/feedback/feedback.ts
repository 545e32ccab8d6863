import { charSuffix, graphemePrefix, utf8ByteLength, utf8Prefix } from '@codefleet/core';
import type { StepResult } from '../types.js';
import { cleanLine } from './patterns.js';
import { renderFeedback } from './render.js';
import { scanLog } from './scan.js';

/** Default size of the feedback given to the agent: small enough for a small model's context. */
export const defaultFeedbackBytes = 4096;

// Characters of command shown in the feedback header; the rest is elided.
const maxCommandChars = 300;

/**
 * Trims a log of any size to at most `maxBytes` of UTF-8 for the agent: every failing test
 * name (as many as fit), then the first compiler, lint or assertion errors in whole lines
 * (the first one cut at a line boundary with a marker only if it alone exceeds the budget),
 * then the end of the output if room remains. Linear in the size of the log.
 */
export function extractFeedback(log: string, maxBytes: number = defaultFeedbackBytes): string {
  return renderFeedback({ findings: scanLog(log), tail: tailLines(log, maxBytes), maxBytes });
}

/**
 * Feedback for a failed step: `Step <name> failed (exit <code>): <command>`, then what
 * {@link extractFeedback} keeps, within `maxBytes` in total. Uses the findings collected over
 * the step's whole output when present, so failures that scrolled out of the tail still count.
 */
export function feedbackFor(failed: StepResult, maxBytes: number = defaultFeedbackBytes): string {
  const tail = tailLines(failed.outputTail, maxBytes);
  const findings = failed.findings ?? scanLog(failed.outputTail);
  return renderFeedback({ header: stepHeader(failed), findings, tail, maxBytes });
}

/**
 * `parts` joined, within `maxBytes` of UTF-8 in total: each part keeps what fits after the
 * ones before it, cut at a line end, so a notice put before the feedback (or a list put after
 * it) never pushes the whole past the budget a small model's context was given.
 */
export function fitFeedback(parts: readonly string[], maxBytes: number = defaultFeedbackBytes): string {
  let left = maxBytes;
  const kept: string[] = [];
  for (const part of parts) {
    if (left <= 0) break;
    let text = utf8Prefix(part, left);
    if (text.length < part.length) {
      const lineEnd = text.lastIndexOf('\n');
      text = lineEnd > 0 ? text.slice(0, lineEnd) : text;
    }
    kept.push(text);
    left -= utf8ByteLength(text);
  }
  return kept.join('');
}

function stepHeader(step: StepResult): string {
  let command = step.command.join(' ');
  if (command.length > maxCommandChars) command = `${graphemePrefix(command, maxCommandChars)}…`;
  let why: string;
  if (step.spawnError !== undefined) why = `could not start: ${step.spawnError}`;
  else if (step.timedOut) why = `timed out, exit ${step.exitCode ?? 'none'}`;
  else if (step.exitCode !== null) why = `exit ${step.exitCode}`;
  else why = `signal ${step.signal ?? 'unknown'}`;
  return `Step ${step.name} failed (${why}): ${command}`;
}

/** The whole lines at the end of `text` that could fill `maxBytes`, cleaned for display. */
function tailLines(text: string, maxBytes: number): string[] {
  // A character is at least one byte, so this many characters can fill the budget.
  const chars = Math.max(0, Math.floor(maxBytes)) + 1;
  const cut = text.length > chars;
  const lines = (cut ? charSuffix(text, chars) : text).split('\n');
  // The first line of a cut text is partial; a lone (very long) line is kept and cut later.
  if (cut && lines.length > 1) lines.shift();
  // `boundTail` starts a cut output with a marker line followed by a partial line.
  if (!cut && lines[0]?.startsWith('…[truncated ') === true) {
    lines.shift();
    if (lines.length > 1) lines.shift();
  }
  return lines.map(cleanLine);
}
