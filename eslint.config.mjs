// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** See the hot-path block below. */
const NO_SPREAD_THEN_FIELDS = {
  selector: 'ObjectExpression > SpreadElement ~ *',
  message:
    'A spread followed by more properties makes a new hidden class per call on Node 20: name the fields, put the spread last, or use Object.assign.',
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'dist-sample/**',
      'coverage/**',
      '**/node_modules/**',
      'bench/results/**',
      'consumers/**',
      '.tmp/**',
      'bench/.cache/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A lock's release or extension that nobody awaits fails silently: every promise is awaited, returned or marked `void`.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // Duck-typed client shapes (ioredis copies, other client libraries) are typed loosely on purpose.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Compiled against the built declarations (npm run test:types), which lint runs before: type-checked there, not here.
    files: ['test/types/public-api.ts'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // A file is read in one sitting, a function on one screen.
    files: ['lib/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // The code every acquisition, release or @Locked call runs. Node 20's V8 gives `{ ...a, b }`
    // (a spread of an object literal's object, then anything more) a new hidden class at every
    // call, even at steady state, so every reader of the result misses its inline caches (a perf
    // profile of the semaphore's hot path showed the new maps and the misses). `{ b, ...a }`,
    // `Object.assign({}, a, { b })` or every field named keep one class. Elsewhere (options read
    // once, operator calls) the spread stays.
    files: [
      'lib/core/{acquire-attempt,acquire-loop,acquire-plan,held-locks,keys,lock,node,permit,permit-scripts,redlock,round,script,scripts,turn,wake-notifier}.ts',
      'lib/nest/{busy,lock-context,lock-key,lock.service,locked.runner,redlock.telemetry}.ts',
    ],
    rules: {
      'no-restricted-syntax': ['error', NO_SPREAD_THEN_FIELDS],
    },
  },
  {
    // The files the acquire path's per-node arrays (reports, votes, flags) and keys pass
    // through. `map` returns a packed array from unoptimized code and a holey one once
    // TurboFan inlines it, and `new Array(n)` is always holey: the readers' optimized code
    // is thrown away at each kind it had not seen (see lib/core/packed.ts). Same rule
    // name as the block above, whose selector it repeats: a later block replaces the rule.
    files: ['lib/core/{acquire-attempt,acquire-loop,keys,round,turn}.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        NO_SPREAD_THEN_FIELDS,
        {
          selector: "CallExpression[callee.property.name='map'], NewExpression[callee.name='Array'], CallExpression[callee.name='Array']",
          message: 'Per-node arrays here stay packed in every tier: use packedMap / packedFill (lib/core/packed.ts).',
        },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: {
      globals: globals.node,
    },
    rules: { 'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }] },
  },
);
