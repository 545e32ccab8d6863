import type { JobContext } from '@codefleet/pipeline';

type Progress = Parameters<NonNullable<JobContext['onProgress']>>[0];

/**
 * Shows where a running job is: on a TTY one line rewritten in place (stage, pass, attempt,
 * elapsed), otherwise one plain line per change so logs and CI output stay readable.
 */
export function progressReporter(stream: NodeJS.WriteStream = process.stderr): {
  onProgress: (p: Progress) => void;
  done: () => void;
} {
  const started = Date.now();
  let last = '';
  let timer: NodeJS.Timeout | undefined;
  const render = (p: Progress) => {
    const elapsed = `${((Date.now() - started) / 1000).toFixed(1)}s`;
    const pass = p.pass ? ` · pass ${p.pass}` : '';
    const attempt = p.innerAttempt ? ` · attempt ${p.innerAttempt}` : '';
    return `[${p.stage}]${pass}${attempt} · ${elapsed}`;
  };
  if (!stream.isTTY) {
    return {
      onProgress: (p) => {
        const line = render(p);
        if (line.replace(/ · [\d.]+s$/, '') !== last.replace(/ · [\d.]+s$/, '')) stream.write(`${line}\n`);
        last = line;
      },
      done: () => undefined,
    };
  }
  let current: Progress | undefined;
  timer = setInterval(() => current && stream.write(`\r\x1b[2K${render(current)}`), 250);
  timer.unref();
  return {
    onProgress: (p) => {
      current = p;
      stream.write(`\r\x1b[2K${render(p)}`);
    },
    done: () => {
      clearInterval(timer);
      timer = undefined;
      if (current) stream.write('\n');
    },
  };
}
