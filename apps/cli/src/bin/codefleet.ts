#!/usr/bin/env node
import { runCli } from '../program.js';

// The one place the CLI touches the real process: argv, streams and exit code. The
// environment is read by the config loader, the only module that does.
const code = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  cwd: process.cwd(),
});
process.exitCode = code;
