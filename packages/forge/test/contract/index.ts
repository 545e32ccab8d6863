// The forge contract suite as adapters in other packages reach it: `@codefleet/forge/contract`,
// imported from their tests only. It is test code, so it lives outside src/ and never reaches dist/.
export { awkwardMarkdown, forgeContract, type ForgeContractHarness, type OpenedForge } from './forge-contract.js';
export { forgeGitEnv } from './git-env.js';
