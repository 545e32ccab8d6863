import { fileURLToPath } from 'node:url';
import { parseConfig, type VerificationConfig } from '@codefleet/config';

/** The shipped defaults of `verification:`, parsed from an empty config.yaml. */
export function defaultVerification(): VerificationConfig {
  return parseConfig('', { env: {}, baseDir: '/', hostname: 'test' }).config.verification;
}

/** A config with the given per-toolchain commands replaced. */
export function verificationWith(
  toolchain: keyof VerificationConfig['toolchains'],
  commands: Partial<VerificationConfig['toolchains']['node']>,
): VerificationConfig {
  const config = defaultVerification();
  config.toolchains[toolchain] = { ...config.toolchains[toolchain], ...commands };
  return config;
}

/** The environment test commands run with: PATH and HOME only. */
export const testEnv: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' };

/** A `node -e <script>` command vector, the fixture process of most step tests. */
export const nodeScript = (script: string): string[] => [process.execPath, '-e', script];

/** Path of a file under test/fixtures. */
export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
