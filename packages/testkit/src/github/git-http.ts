import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Serves bare repositories over git's smart HTTP protocol by running the real
 * `git http-backend` CGI program, so clone, fetch and push from the code under test speak
 * the same protocol they speak to github.com. The caller has checked authentication.
 */
export function serveGit(
  req: IncomingMessage,
  res: ServerResponse,
  options: { projectRoot: string; pathInfo: string; query: string; user: string },
): void {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_PROJECT_ROOT: options.projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: options.pathInfo,
    QUERY_STRING: options.query,
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_USER: options.user,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
  };
  if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = String(req.headers['content-length']);
  if (req.headers['content-encoding'] !== undefined)
    env.HTTP_CONTENT_ENCODING = String(req.headers['content-encoding']);
  if (req.headers['git-protocol'] !== undefined) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
  const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  req.pipe(cgi.stdin);

  // CGI output: header lines, a blank line, then the body.
  let head = Buffer.alloc(0);
  let headersDone = false;
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    const endLf = head.indexOf('\n\n');
    const cut = end >= 0 ? { at: end, len: 4 } : endLf >= 0 ? { at: endLf, len: 2 } : undefined;
    if (!cut) return;
    headersDone = true;
    let status = 200;
    for (const line of head.subarray(0, cut.at).toString('utf8').split(/\r?\n/)) {
      const sep = line.indexOf(':');
      if (sep < 0) continue;
      const name = line.slice(0, sep).trim();
      const value = line.slice(sep + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 200;
      else res.setHeader(name, value);
    }
    res.writeHead(status);
    res.write(head.subarray(cut.at + cut.len));
  });
  let stderr = '';
  cgi.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  cgi.on('close', (code) => {
    if (!headersDone) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`git http-backend failed (${code}): ${stderr}`);
      return;
    }
    res.end();
  });
}
