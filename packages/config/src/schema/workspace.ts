import * as z from 'zod';

/** `workspace:` — where working copies of repositories are kept. */
export const workspaceSchema = z
  .strictObject({
    cache_dir: z
      .string()
      .min(1)
      .optional()
      .describe('Directory for clones and per-job working copies. Default: <data_dir>/cache.'),
    reuse: z
      .boolean()
      .default(true)
      .describe('Keep a pooled clone per repository and add a working copy per job, instead of a fresh clone each time.'),
    keep_failed: z
      .boolean()
      .default(false)
      .describe('Keep the working copy of a failed job for inspection instead of deleting it.'),
  })
  .prefault({})
  .describe('Working copies.');
