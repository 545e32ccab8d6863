import * as z from 'zod';
import { argv, runEnv, seconds } from './common.js';

interface StepDefaults {
  build: string[];
  format: string[];
  lint: string[];
  test: string[];
}

const STEP_DOCS = {
  build: 'Build command.',
  format: 'Formatter; it fixes files in place and its changes are kept, so it does not fail a job.',
  lint: 'Vet or lint command.',
  test: 'Test command.',
} as const;

function toolchain(name: string, defaults: StepDefaults) {
  const step = (key: keyof StepDefaults) =>
    argv.default(() => [...defaults[key]]).describe(`${STEP_DOCS[key]} An empty list skips the step.`);
  return z
    .strictObject({ build: step('build'), format: step('format'), lint: step('lint'), test: step('test') })
    .prefault({})
    .describe(`Verification commands for ${name} repositories, as argument vectors (no shell).`);
}

/** `verification:` — the build -> format -> lint -> test gate every change passes before a PR. */
export const verificationSchema = z
  .strictObject({
    step_timeout_seconds: seconds(1).default(600).describe('Timeout of one verification command in seconds.'),
    env: runEnv('verification steps and installs'),
    baseline: z
      .boolean()
      .default(true)
      .describe(
        "Verify the untouched base commit once (cached per repository, base commit and plan): a step that fails there too is reported as pre-existing, never fed back as the agent's fault.",
      ),
    on_dod_failure: z
      .enum(['draft', 'none'])
      .default('draft')
      .describe('When the definition of done is not met: open a draft PR, or open none.'),
    toolchains: z
      .strictObject({
        node: toolchain('Node.js', {
          build: ['npm', 'run', 'build', '--if-present'],
          // The repository's own formatter, when it has one, as gofmt, ruff and cargo fmt are.
          format: ['npm', 'run', 'format', '--if-present'],
          lint: ['npm', 'run', 'lint', '--if-present'],
          test: ['npm', 'test'],
        }),
        go: toolchain('Go', {
          build: ['go', 'build', './...'],
          format: ['gofmt', '-l', '-w', '.'],
          lint: ['go', 'vet', './...'],
          test: ['go', 'test', './...'],
        }),
        python: toolchain('Python', {
          build: [],
          format: ['ruff', 'format'],
          lint: ['ruff', 'check'],
          test: ['pytest'],
        }),
        rust: toolchain('Rust', {
          build: ['cargo', 'build'],
          format: ['cargo', 'fmt'],
          lint: ['cargo', 'clippy', '--', '-D', 'warnings'],
          test: ['cargo', 'test'],
        }),
      })
      .prefault({})
      .describe('Default commands per toolchain; a repository or job may override them.'),
  })
  .prefault({})
  .describe('Verification of changes.');
