import { CodefleetError } from '@codefleet/core';
import { describeDamage, type SqliteDamage } from '@codefleet/sqlite';

/** What the operator can do about a damaged queue file; none of it is done for them, since each loses or replaces jobs. */
function fixFor(damage: SqliteDamage): string {
  const { path } = damage;
  const aside = `move ${path} and its -wal and -shm files aside`;
  switch (damage.kind) {
    case 'wrong_schema':
      return `set queue.local.path to the queue's file, or ${aside}: the next start creates an empty queue`;
    case 'corrupt':
      return (
        `stop the workers, then recover what it holds: \`sqlite3 ${path} .recover | sqlite3 ${path}.recovered\`, ` +
        `${aside} and rename ${path}.recovered to ${path}; or restore ${path} from a backup; ` +
        `or ${aside} to start an empty queue, and enqueue its jobs again`
      );
    case 'empty':
    case 'not_a_database':
      return `stop the workers; restore ${path} from a backup, or ${aside} to start an empty queue, and enqueue its jobs again (\`codefleet runs\` lists those that had started)`;
  }
}

/**
 * The error for a damaged queue file: `queue_unavailable`, but permanent, since trying
 * again reads the same damage. It names the file and the fix (also in `details`, for
 * `doctor`), so a worker stops with it rather than loop, and a listing fails rather than
 * show an empty queue.
 */
export function queueDamaged(damage: SqliteDamage): CodefleetError {
  const what = describeDamage(damage);
  const fix = fixFor(damage);
  return new CodefleetError('queue_unavailable', `the local queue ${what}; fix: ${fix}`, {
    verdict: 'permanent',
    cause: damage.cause,
    details: { path: damage.path, damage: damage.kind, what, fix },
  });
}
