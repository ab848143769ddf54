import base from './jest.config.js';

/** `npm run test:faults`: the fault-injection suite (worker processes load the built library). */
export default {
  ...base,
  roots: ['<rootDir>/test/faults'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 120_000,
  maxWorkers: 1,
};
