import { readFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';

/**
 * A free TCP port on loopback, for a server a test starts itself. The port is released
 * before returning, so it is picked where nothing else is given ports: below the ephemeral
 * range (Linux: `ip_local_port_range`), from which the kernel hands every port-0 server and
 * every outgoing connection theirs. From that range, a suite's port was taken on a busy
 * machine between this call and its server's listen (and a port freed by a killed server,
 * listened on again by its restart). Here only another freePort caller could take it, and
 * one picks it at random among some 20,000.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const low = 10_100; // above 10080, on fetch's list of bad ports
  const high = (await ephemeralLow()) - 1;
  for (let tries = 0; tries < 20 && high > low; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await listensOn(port, host)) return port;
  }
  const given = await listensOn(0, host);
  if (given === false) throw new Error(`could not listen on ${host}`);
  return given;
}

/** Where the ephemeral range starts: Linux says; elsewhere IANA's 49152 (macOS uses it). */
async function ephemeralLow(): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '');
  const low = Number(range.trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 1024 ? low : 49_152;
}

/** Listens on `port` and closes again: the port it got, or false when it was taken. */
function listensOn(port: number, host: string): Promise<number | false> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(false) : reject(error),
    );
    server.listen({ port, host }, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the listening port'));
      });
    });
  });
}

/**
 * A loopback port nothing listens on, for tests of a refused connection. A port from
 * {@link freePort} will not do: on a busy machine another suite's server can take it in
 * between, and then answers (and records) this test's requests. Port 2 lies below the
 * ephemeral range every port-0 server is given, and is not on fetch's list of bad ports; a
 * probe makes sure nothing else listens there either.
 */
export function closedPort(host = '127.0.0.1'): Promise<number> {
  const port = 2;
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      reject(new Error(`something listens on ${host}:${port}; closedPort needs it closed`));
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') resolve(port);
      else reject(error);
    });
  });
}
