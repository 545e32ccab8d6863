/** One sample of a scraped metric: its name, labels and value. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A scraped exposition: its samples and the `# TYPE` of each metric family. */
export interface PromScrape {
  samples: PromSample[];
  types: Map<string, string>;
  /** The value of the one sample named `name` whose labels include `labels`; undefined when none, throws when several. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * Parses the Prometheus text exposition format (what `/metrics` serves), strictly enough
 * that a malformed line fails the test: every non-comment line must be a sample.
 */
export function parsePrometheusText(text: string): PromScrape {
  const samples: PromSample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const match = sampleLine.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? '').matchAll(labelPair))
      labels[key!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    // Prometheus reads these case-insensitively (prom-client writes `Nan`).
    const raw = match[3]!.toLowerCase();
    const value =
      raw === 'nan'
        ? Number.NaN
        : raw === '+inf' || raw === 'inf'
          ? Infinity
          : raw === '-inf'
            ? -Infinity
            : Number(raw);
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`not a sample value: ${line}`);
    samples.push({ name: match[1]!, labels, value });
  }
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = samples.filter(
        (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      );
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
  };
}
