/** @type {import('jest').Config} */
const swc = {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
  },
  module: { type: 'es6' },
};

export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/faults/'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Mercurius loads @fastify/static, which require()s content-disposition 3, an ES module: Node 20.19+ does that
    // natively, jest's module loader (before Node 24.9) cannot. Version 2 (express's, CommonJS) has the same `create`.
    '^content-disposition$': '<rootDir>/node_modules/content-disposition/dist/index.js',
  },
  // Finds the Redis servers once, or stops at once with one line saying what to install.
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  testTimeout: 30000,
  maxWorkers: 2,
};
