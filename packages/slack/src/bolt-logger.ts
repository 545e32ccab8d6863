import type { Logger } from '@codefleet/log';
import { LogLevel, type Logger as BoltLogger } from '@slack/bolt';

/**
 * Bolt's logger interface over codefleet's pino logger, so the SDK's lines go through the
 * same masking destination as ours. Bolt logs at `info` more than we want (every
 * connection step), so its info lines become debug.
 */
export function boltLogger(log: Logger): BoltLogger {
  let level: LogLevel = LogLevel.INFO;
  let name = 'bolt';
  const line = (msg: unknown[]) =>
    msg.map((m) => (typeof m === 'string' ? m : m instanceof Error ? m.message : JSON.stringify(m))).join(' ');
  return {
    debug: (...msg) => log.debug({ sdk: name }, line(msg)),
    info: (...msg) => log.debug({ sdk: name }, line(msg)),
    warn: (...msg) => log.warn({ sdk: name }, line(msg)),
    error: (...msg) => log.error({ sdk: name }, line(msg)),
    setLevel: (next) => {
      level = next;
    },
    getLevel: () => level,
    setName: (next) => {
      name = next;
    },
  };
}
