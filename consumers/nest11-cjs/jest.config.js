// CommonJS jest: .ts files are transpiled by swc to CommonJS, so
// `import ... from 'nest-redlock'` becomes require() and resolves through the
// "require" condition (dist/cjs).
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.e2e-spec.ts'],
  transform: {
    // .js: test/redis-spawner.js (copied in from the repo's scripts/) is an ES module.
    '^.+\\.[jt]s$': [
      '@swc/jest',
      {
        jsc: {
          target: 'es2022',
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  testTimeout: 30000,
};
