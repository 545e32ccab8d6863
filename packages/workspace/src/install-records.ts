/**
 * The install record's reader (@codefleet/verify writes the record), loaded on first use: a
 * worker waiting for jobs loads the workspace (its sweeper) but not verification.
 */
export const installRecords = () => import('@codefleet/verify');
