// One flat config for the whole tree: `npm run lint` is one `eslint .` at the root (one process
// instead of one per workspace, a third of the time).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', '**/.turbo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: 'Only @codefleet/config reads process.env; pass configuration in.',
        },
      ],
    },
  },
  {
    // The config loader is the one module that reads the environment; tests, benches and
    // scripts set up child environments on purpose.
    files: [
      'packages/config/src/**',
      'packages/testkit/src/**',
      '**/*.test.ts',
      '**/test/**',
      '**/bench/**',
      'scripts/**',
      '**/*.mjs',
      '**/*.cjs',
    ],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    languageOptions: { globals: globals.node },
  },
);
