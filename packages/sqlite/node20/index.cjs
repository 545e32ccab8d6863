// better-sqlite3, for @codefleet/sqlite on the Nodes this package's engines name (see
// package.json): on any other Node npm skips this package, and so never downloads or builds it.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS package passed on as it is
module.exports = require('better-sqlite3');
