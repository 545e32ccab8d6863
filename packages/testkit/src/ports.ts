import { createServer } from 'node:net';

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
