/**
 * @codefleet/log: structured pino logging where every written line is masked for secrets.
 * Event convention: see {@link createLogger}.
 */
export { createLogger, silentLogger, type CreateLoggerOptions, type Logger, type LogLevel } from './logger.js';
export { createMasker, maskSecrets, MASK, REDACTED, type Masker } from './mask.js';
export { SecretRegistry, secretValues, type SecretRegistryOptions, type SecretSource } from './secret-registry.js';
export {
  scanForSecrets,
  type ChangedContent,
  type ScanOptions,
  type SecretEncoding,
  type SecretHit,
} from './scan-secrets.js';
export { maskForPublishing, WITHHELD } from './withhold.js';
export {
  createMaskingDestination,
  resolveLogFormat,
  type LogDestination,
  type LogFormat,
  type LogFormatSetting,
} from './destination.js';
export { formatPretty } from './pretty.js';
