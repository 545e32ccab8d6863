import type { RunRecord } from '@codefleet/core';
import type { RunSummary } from '@codefleet/store';

/** `codefleet runs` table. */
export function formatRuns(runs: RunSummary[]): string {
  if (runs.length === 0) return 'no runs yet';
  const rows = runs.map((r) => [
    r.runId, r.stage, r.outcome ?? '', String(r.attempts), r.pullRequest ? `#${r.pullRequest.number}${r.pullRequest.draft ? ' (draft)' : ''}` : '', r.title.slice(0, 50),
  ]);
  return table(['RUN', 'STAGE', 'OUTCOME', 'ATTEMPTS', 'PR', 'TITLE'], rows);
}

/** `codefleet show`: stage timeline, attempts and checks of one run. */
export function formatRun(run: RunRecord): string {
  const start = Date.parse(run.created_at);
  const lines = [
    `${run.job.title}`,
    `run ${run.run_id} · ${run.job.repo} · stage ${run.stage}${run.outcome ? ` · outcome ${run.outcome}` : ''}${run.dod_result ? ` · DoD ${run.dod_result}` : ''}`,
  ];
  if (run.pull_request) lines.push(`pull request #${run.pull_request.number}${run.pull_request.draft ? ' (draft)' : ''} ${run.pull_request.url ?? ''} (${run.pull_request.head} → ${run.pull_request.base})`);
  if (run.error) lines.push(`error ${run.error.code} (${run.error.verdict}): ${run.error.message.split('\n')[0]}`);
  lines.push('', 'Timeline:');
  lines.push(...run.stages.map((s) => `  +${((Date.parse(s.at) - start) / 1000).toFixed(1).padStart(6)}s  ${s.stage.padEnd(12)} attempt ${s.attempt}${s.note ? `  (${s.note})` : ''}`));
  lines.push('', 'Agent runs:');
  lines.push(...run.agent_runs.map((a) => `  ${a.pass.padEnd(9)} attempt ${a.attempt}.${a.inner_attempt}  ${a.outcome.padEnd(10)} exit ${a.exit_code ?? a.signal}  ${a.duration_ms} ms  ${a.changed_files.length} file(s)`));
  lines.push('', 'Checks:');
  lines.push(...run.verification.map((v) => `  ${v.passed ? 'ok  ' : 'FAIL'} ${v.pass.padEnd(9)} attempt ${v.attempt}.${v.inner_attempt}  ${v.step.padEnd(7)} ${v.command.join(' ')}  (exit ${v.exit_code ?? v.signal}, ${v.duration_ms} ms)`));
  return lines.join('\n');
}

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}
