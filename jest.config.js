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
  // lib/core/clients/require-ioredis.cts is CommonJS in the build, and here too (imported as its build's .cjs, mapped below).
  moduleFileExtensions: ['js', 'mjs', 'cjs', 'ts', 'cts', 'json'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', swc],
    '^.+\\.cts$': ['@swc/jest', { ...swc, module: { type: 'commonjs' } }],
  },
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Only this one: packages' own relative .cjs files must stay as they are.
    '^\\./require-ioredis\\.cjs$': '<rootDir>/lib/core/clients/require-ioredis.cts',
    // Mercurius loads @fastify/static, which require()s content-disposition 3, an ES module: Node 20.19+ does that
    // natively, jest's module loader (before Node 24.9) cannot. Version 2 (express's, CommonJS) has the same `create`.
    '^content-disposition$': '<rootDir>/node_modules/content-disposition/dist/index.js',
  },
  // Finds the Redis servers once, or stops at once with one line saying what to install.
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  testTimeout: 30000,
  maxWorkers: 2,
  // A worker that ran many files holds hundreds of MB (a module registry per file); freeing
  // them at exit took ~650 ms here, past the 500 ms Jest waits before it force-exits a worker
  // and prints "failed to exit gracefully", though nothing was left open. Recycled above this,
  // a worker usually exits in time (the run is no slower); on a loaded machine it may not.
  workerIdleMemoryLimit: '300MB',
};
