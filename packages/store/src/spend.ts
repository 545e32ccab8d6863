import { CodefleetError } from '@codefleet/core';

/** The UTC day of `at` as the spend ledger keys it: `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

const dayShape = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Refuses what no caller should pass the ledger (see `SpendLedger`): a day that is not
 * `YYYY-MM-DD`, an amount that is not a finite number ≥ 0. `usd` is absent for reads.
 */
export function checkSpend(day: string, usd?: number): void {
  if (!dayShape.test(day)) {
    throw new CodefleetError(
      'invalid_job',
      `a spend day is YYYY-MM-DD (UTC), got ${JSON.stringify(day.slice(0, 40))}`,
      { verdict: 'permanent' },
    );
  }
  if (usd !== undefined && !(Number.isFinite(usd) && usd >= 0)) {
    throw new CodefleetError('invalid_job', `a spend amount is a finite number of US dollars ≥ 0, got ${String(usd)}`, {
      verdict: 'permanent',
    });
  }
}
