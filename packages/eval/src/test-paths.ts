// Which files of a change are tests, by the conventions of the toolchains the verifier knows:
// a mined change is split into its fix (what the agent must write) and its tests (what grade
// it, hidden from the agent).

/** Directory names that hold tests in Node, Python and Rust projects; Go's `testdata` holds their data. */
const testDirs = new Set(['test', 'tests', '__tests__', 'spec', 'testdata', '__snapshots__']);

/** File names that are tests whatever their directory. */
const testFiles = [
  /\.(?:test|spec)\.[cm]?[jt]sx?$/, // jest, vitest, mocha, node:test
  /\.(?:test|spec)\.[jt]sx?\.snap$/,
  /(?:^|\/)test_[^/]*\.py$/, // pytest
  /_test\.py$/,
  /(?:^|\/)conftest\.py$/,
  /_test\.go$/, // go test
];

/** Whether `path` (repository-relative, `/`-separated) is a test file or test data. */
export function isTestPath(path: string): boolean {
  const parts = path.split('/');
  if (parts.slice(0, -1).some((dir) => testDirs.has(dir))) return true;
  return testFiles.some((pattern) => pattern.test(path));
}

/** Files a fix may touch without changing behaviour: documentation and changelogs. */
const docFile = /(?:^|\/)(?:docs?\/.*|[^/]*\.(?:md|mdx|rst|txt|adoc)|CHANGELOG[^/]*|CHANGES[^/]*|LICENSE[^/]*)$/i;

/** Whether `path` is documentation, which alone makes no fix. */
export function isDocPath(path: string): boolean {
  return docFile.test(path);
}
