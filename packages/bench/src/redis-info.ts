import { connect } from 'node:net';
import { readFile } from 'node:fs/promises';

/** One command's line of `INFO commandstats`. */
export interface CommandStat {
  command: string;
  calls: number;
  /** Microseconds Redis spent executing it (not reading requests or writing replies). */
  usec: number;
}

/** Sends one command over RESP and resolves its bulk-string reply (`INFO` answers one). */
export function redisBulk(url: string, args: string[]): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const header = data.indexOf('\r\n');
      if (header < 0) return;
      const first = data.subarray(0, header).toString('utf8');
      if (!first.startsWith('$')) {
        socket.end();
        if (first.startsWith('-')) reject(new Error(`redis: ${first.slice(1)}`));
        else resolve(first.slice(1));
        return;
      }
      const length = Number(first.slice(1));
      if (data.length < header + 2 + length) return;
      socket.end();
      resolve(data.subarray(header + 2, header + 2 + length).toString('utf8'));
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

/** Parses `INFO commandstats` (`cmdstat_get:calls=10,usec=20,usec_per_call=2.00,...`). */
export function parseCommandStats(info: string): CommandStat[] {
  const stats: CommandStat[] = [];
  for (const line of info.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (match) stats.push({ command: match[1] ?? '', calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats.sort((a, b) => b.calls - a.calls);
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  // Linux reports in clock ticks of USER_HZ, 100 on every mainstream architecture.
  return ticks / 100;
}
