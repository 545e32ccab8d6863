/**
 * The fleet key of every test: tests that sign jobs themselves (a queue opened with a
 * keyring, a worker or CLI run given `CODEFLEET_FLEET_KEY`) take it from here, so no test
 * invents its own. Make the keyring with `fleetKey(testFleetKey)` from @codefleet/core.
 */
export const testFleetKey = 'codefleet-test-fleet-key-0123456789abcdef';

/** A second key, for rotation tests: the key being rotated out, or one the fleet never held. */
export const otherTestFleetKey = 'codefleet-test-other-key-fedcba9876543210';

/** The environment that gives a `codefleet` process (CLI test, chaos worker) the test fleet key. */
export function testFleetKeyEnv(): { CODEFLEET_FLEET_KEY: string } {
  return { CODEFLEET_FLEET_KEY: testFleetKey };
}
