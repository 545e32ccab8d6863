import type { Job, Pass } from '@codefleet/core';

// A memory bank update is allowed, never silent: the PR body lists it in its own section.
const memoryProposal =
  'If this task taught something every later task should know (a convention, a decision, a pitfall), you may add or edit a short file under .codefleet/memory/ (plain name, .md); reviewers see it as a proposed memory bank update.';

/**
 * The prompt of one agent run: the pass's instruction, the repository's memory bank
 * (`memory`: the bounded notes `readMemoryBank` made, after the task so the task reads
 * first and wins), for the first run of an escalation tier why the earlier tier gave up
 * (`earlierTier`), plus the previous attempt's feedback.
 */
export function promptFor(
  job: Job,
  criteria: readonly string[],
  pass: Pass,
  feedback?: string,
  context: { memory?: string | undefined; earlierTier?: string | undefined } = {},
): string {
  const { memory, earlierTier } = context;
  const instruction =
    pass === 'implement'
      ? 'Implement the task below in this repository.'
      : "The task below has been implemented. Now write or update automated tests that cover it, following the project's existing test setup, and make sure they pass.";
  const parts = [
    instruction,
    '',
    `Task: ${job.title}`,
    '',
    job.body,
    '',
    'Acceptance criteria:',
    ...criteria.map((c) => `- ${c}`),
    '',
    'The full task is in .codefleet/task.md. Do not commit.',
  ];
  if (memory !== undefined && memory !== '') {
    parts.push('', memory, '', memoryProposal);
  }
  if (earlierTier) {
    parts.push(
      '',
      'Another agent tried this task first and did not finish it. The repository was reset to where it started, so none of its changes are here. What stopped it, to help you avoid the same:',
      '',
      earlierTier,
    );
  }
  if (feedback) parts.push('', 'Your previous attempt failed verification. Fix the problems below:', '', feedback);
  return parts.join('\n');
}
