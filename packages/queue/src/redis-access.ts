import type { Redis } from 'ioredis';
import { redisRefusalError, redisWhere } from '@codefleet/core';

/**
 * Watches a queue's Redis connections for a refusal (NOAUTH, WRONGPASS, NOPERM). ioredis
 * answers one by reconnecting forever while commands wait, so without this a claim would
 * hang and an enqueue would time out as "not reachable". With it, what waits on Redis
 * rejects with an error naming the setting to fix; a connection that later authenticates
 * (the server's password was put back) clears it.
 */
export class RedisAccessWatch {
  readonly #where: string;
  readonly #setting: string;
  #refused: Error | undefined;
  readonly #waiting = new Set<(error: Error) => void>();

  constructor(url: string, setting: string) {
    this.#where = redisWhere(url);
    this.#setting = setting;
  }

  /** Starts watching `connection`; its other errors stay the caller's to handle. */
  watch(connection: Redis): void {
    connection.on('error', (error: unknown) => {
      const refused = redisRefusalError(error, {
        code: 'queue_unavailable',
        where: this.#where,
        setting: this.#setting,
      });
      if (refused === undefined) return;
      this.#refused = refused;
      for (const listener of [...this.#waiting]) listener(refused);
    });
    connection.on('ready', () => {
      this.#refused = undefined;
    });
  }

  /** The refusal, while the last attempt to authenticate failed. */
  get refused(): Error | undefined {
    return this.#refused;
  }

  /**
   * Rethrows `error`, as the refusal naming the setting when it is one: a command the ACL
   * user may not run (NOPERM) fails that command, not the connection.
   */
  rethrow = (error: unknown): never => {
    throw redisRefusalError(error, { code: 'queue_unavailable', where: this.#where, setting: this.#setting }) ?? error;
  };

  /** Calls `listener` on each refusal until the returned function is called. */
  onRefused(listener: (error: Error) => void): () => void {
    this.#waiting.add(listener);
    return () => {
      this.#waiting.delete(listener);
    };
  }

  /**
   * `promise`, or a rejection as soon as Redis refuses the credentials. A value that arrives
   * after that goes to `late`, so it is not lost silently.
   */
  guard<T>(promise: Promise<T>, late: (value: T) => void = () => undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let refused = false;
      const stop = this.onRefused((error) => {
        refused = true;
        stop();
        reject(error);
      });
      promise.then(
        (value) => {
          stop();
          if (refused) late(value);
          else resolve(value);
        },
        (error: unknown) => {
          stop();
          if (!refused)
            reject(
              redisRefusalError(error, { code: 'queue_unavailable', where: this.#where, setting: this.#setting }) ??
                error,
            );
        },
      );
    });
  }
}
