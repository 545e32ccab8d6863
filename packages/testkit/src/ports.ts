import { connect, createServer } from 'node:net';

/**
 * Asks the OS for a free TCP port on loopback. The port is released before returning, so
 * another process may take it first; callers that start a server retry on EADDRINUSE.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host }, () => {
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
