#!/usr/bin/env node
// `npm run test:load`: README's test command with four CPU-bound processes running beside it,
// the load a shared 2-core CI machine puts on the suite. A test that passes alone but fails
// here waits on the clock instead of on the event. Not part of `npm test` or `.ci/run`: it
// doubles the suite's wall time. Arguments go to `npm test` (e.g. `--filter=@codefleet/patch`).
import { spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';

const burners = 4;
const root = new URL('..', import.meta.url).pathname;

// stress-ng (Debian's `stress-ng`) when installed: its --cpu workers are the usual yardstick;
// otherwise plain Node busy loops, which load a core the same way.
const stressNg = spawnSync('sh', ['-c', 'command -v stress-ng'], { stdio: 'ignore' }).status === 0;
const load = stressNg
  ? [spawn('stress-ng', ['--cpu', String(burners), '--quiet'], { stdio: 'ignore', detached: true })]
  : Array.from({ length: burners }, () =>
      spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore', detached: true }),
    );
console.log(
  `test:load: ${burners} CPU-bound processes (${stressNg ? 'stress-ng --cpu' : 'node busy loops'}) beside npm test`,
);

// Each burner leads its own process group (stress-ng forks its workers into it): one signal
// to the group stops all of it, whatever way this script ends.
const stopLoad = () => {
  for (const child of load) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
};
process.on('exit', stopLoad);

const loads = [];
const sampler = setInterval(() => loads.push(loadavg()[0]), 10_000);
const started = Date.now();
const tests = spawn(process.execPath, [`${root}scripts/run-tests.mjs`, ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
// Stopped from outside: the test run is told too, and its exit ends this script.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopLoad();
    tests.kill(signal);
  });
}
tests.on('exit', (code, signal) => {
  clearInterval(sampler);
  stopLoad();
  const minutes = (Date.now() - started) / 60_000;
  const peak = loads.length === 0 ? loadavg()[0] : Math.max(...loads);
  const mean = loads.length === 0 ? peak : loads.reduce((a, b) => a + b, 0) / loads.length;
  console.log(
    `test:load: ${minutes.toFixed(1)} min under ${burners} burners, load average ${mean.toFixed(1)} (peak ${peak.toFixed(1)})`,
  );
  process.exit(code ?? (signal === null ? 1 : 128));
});
