import type { Config } from '@codefleet/config';
import { formatUsd } from '@codefleet/core';
import { utcDay, type SpendLedger } from '@codefleet/store';
import type { Check } from './doctor.js';

/**
 * `doctor`'s money line: what the fleet spent today (UTC) from the run store's ledger,
 * against `costs.budget_usd.day`; at or past it the workers claim nothing until the next
 * UTC day, which is a FAIL with the fix. The job budget is named when set.
 */
export async function budgetCheck(
  ledger: Pick<SpendLedger, 'spentOn'>,
  costs: Config['costs'],
  now: Date,
): Promise<Check> {
  const day = utcDay(now);
  const spent = await ledger.spentOn(day);
  const { job, day: limit } = costs.budget_usd;
  const perJob = job === undefined ? '' : `; ${formatUsd(job)} a job`;
  if (limit === undefined)
    return {
      ok: true,
      what: `spend today (${day} UTC): ${formatUsd(spent)}, no daily budget (costs.budget_usd.day)${perJob}`,
    };
  if (spent < limit)
    return {
      ok: true,
      what: `spend today (${day} UTC): ${formatUsd(spent)} of the ${formatUsd(limit)} daily budget${perJob}`,
    };
  return {
    ok: false,
    what: `spend today (${day} UTC): ${formatUsd(spent)} of the ${formatUsd(limit)} daily budget: workers are paused, claiming nothing until 00:00 UTC (queued jobs wait)${perJob}`,
    fix: 'wait for the next UTC day, or raise costs.budget_usd.day in config.yaml and restart the workers',
  };
}
