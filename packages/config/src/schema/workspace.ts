import * as z from 'zod';

// One line of git's sparse-checkout file each: a control character would smuggle in another.
const scopePattern = z
  .string()
  .min(1)
  .max(512)
  // eslint-disable-next-line no-control-regex -- that is the point
  .regex(/^[^\u0000-\u001f\u007f]*$/, { error: 'expected a pattern without control characters' });

const cache = z
  .strictObject({
    max_size_mb: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        "Above this many MB of mirrors, pooled copies and baselines in the cache directory, workers evict the least recently used repositories' (never one a job uses). Unset: no size limit.",
      ),
    max_age_days: z
      .number()
      .min(0)
      .default(30)
      .describe(
        'A repository no job has used for this many days is evicted (its mirror, pooled copies and baselines); an idle pooled copy or a baseline file this old goes on its own. 0: no age limit.',
      ),
  })
  .prefault({})
  .describe(
    'Limits of the cache directory, applied in the background by every worker (store.retention.interval_minutes).',
  );

/** `workspace:` — where working copies of repositories are kept. */
export const workspaceSchema = z
  .strictObject({
    cache_dir: z
      .string()
      .min(1)
      .optional()
      .describe('Directory for clones and per-job working copies. Default: <data_dir>/cache.'),
    cache,
    reuse: z
      .boolean()
      .default(true)
      .describe(
        'Keep a pooled clone per repository and add a working copy per job, instead of a fresh clone each time.',
      ),
    keep_failed: z
      .boolean()
      .default(false)
      .describe('Keep the working copy of a failed job for inspection instead of deleting it.'),
    protect_workflows: z
      .boolean()
      .default(true)
      .describe(
        'Workflow files and the repository actions (.github/workflows/**, .github/actions/**) are read-only for agents and never committed: on GitHub they run with the repository secrets, so an agent that edits one could send them out from the pull request CI.',
      ),
    memory_chars: z
      .number()
      .int()
      .min(0)
      .max(100_000)
      .default(4_000)
      .describe(
        "Bound on the repository's memory bank (.codefleet/memory/*.md: conventions, decisions, known pitfalls) in each agent prompt: whole files while they fit, newest first, then headings and first lines, then left out (and said so). 0 leaves the memory bank out; under 1000 counts as 1000.",
      ),
    scope: z
      .strictObject({
        exclude: z
          .array(scopePattern)
          .max(256)
          .default([])
          .describe(
            'Gitignore-style patterns kept physically out of every working copy (sparse checkout), e.g. "**/*.env", "**/secrets/**": the agent never sees these files.',
          ),
        read: z
          .array(scopePattern)
          .max(256)
          .default([])
          .describe(
            'Gitignore-style patterns checked out read-only (chmod a-w); whatever an agent changes there anyway is left out of the commit.',
          ),
      })
      .prefault({})
      .describe('Scope control for every job: what the agent may not see or may not change.'),
  })
  .prefault({})
  .describe('Working copies.');
