import { CodefleetError } from '@codefleet/core';
import { runProcess } from '@codefleet/process';
import { LogScanner } from '../feedback/scan.js';
import type { RunOptions, StepName, StepResult } from '../types.js';

/** Bytes of output tail kept per step unless the caller says otherwise. */
const defaultStepTailBytes = 8192;

/**
 * Runs one command in `workdir` and records the facts. The whole output streams through a
 * {@link LogScanner}, so a failed step keeps the failing test names and first errors even
 * when they scrolled out of the tail. `format` passes whenever it ran to completion: it
 * fixes files in place, and a non-zero exit there says nothing the other steps will not.
 *
 * @throws {CodefleetError} `cancelled` when `signal` aborts: that is no verdict on the code.
 */
export async function runStep(
  name: StepName | 'dod',
  command: readonly string[],
  workdir: string,
  options: RunOptions,
): Promise<StepResult> {
  throwIfCancelled(options.signal, name, command);
  // An empty command means "skip", as in the config (`build: []`).
  if (command.length === 0) return skippedStep(name, command, 'empty command: step skipped');

  // Announced before any output: a step that prints nothing for minutes (a baseline's
  // quiet test run) is still the one a live progress line names, not the step before it.
  options.onOutput?.(name, '');
  const scanner = new LogScanner();
  const run = (name === 'install' ? options.installRunner : undefined) ?? options.runner ?? runProcess;
  const result = await run(command, {
    cwd: workdir,
    env: options.env,
    timeoutMs: options.timeoutMs,
    tailBytes: options.tailBytes ?? defaultStepTailBytes,
    onOutput: (chunk) => {
      scanner.write(chunk);
      options.onOutput?.(name, chunk);
    },
    // A step writes into a pooled working copy: it must not outlive a killed worker.
    dieWithParent: true,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  if (result.cancelled) throwIfCancelled(AbortSignal.abort(), name, command);

  const ranToEnd = result.spawnError === undefined && !result.timedOut;
  const passed = name === 'format' ? ranToEnd : ranToEnd && result.exitCode === 0;
  const step: StepResult = {
    name,
    command: [...command],
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    durationMs: result.durationMs,
    outputTail: result.outputTail,
    passed,
  };
  if (result.spawnError !== undefined) step.spawnError = result.spawnError;
  if (!passed) step.findings = scanner.end();
  return step;
}

/** A step that was not run, recorded as passed with the reason as its output. */
export function skippedStep(name: StepName | 'dod', command: readonly string[], reason: string): StepResult {
  return {
    name,
    command: [...command],
    exitCode: null,
    signal: null,
    timedOut: false,
    durationMs: 0,
    outputTail: reason,
    passed: true,
    skipped: true,
  };
}

function throwIfCancelled(signal: AbortSignal | undefined, name: string, command: readonly string[]): void {
  if (!signal?.aborted) return;
  throw new CodefleetError('cancelled', `verification cancelled at step ${name}`, {
    details: { step: name, command: command.join(' ') },
  });
}
