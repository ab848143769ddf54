import { describe, expect, it } from '@jest/globals';
import * as main from '../../lib/index.js';
import * as health from '../../lib/health/index.js';
import * as testing from '../../lib/testing/index.js';

/**
 * The values each entry point exports. A change to this list is a change to
 * the public API: make it on purpose (and in the README), with the type test
 * beside it (public-api.ts, `npm run test:types`).
 */
describe('public exports', () => {
  it.each([
    [
      'nest-redlock',
      main,
      [
        'ClientClosedError',
        'InvalidArgumentError',
        'LOCKED_METADATA',
        'Lock',
        'LockAbortedError',
        'LockBusyException',
        'LockError',
        'LockEventsLogger',
        'LockKindMismatchError',
        'LockLostError',
        'LockService',
        'LockGraphQLError',
        'LockUnavailableException',
        'Locked',
        'LockedInterceptor',
        'MAX_RESOURCES',
        'MAX_RESOURCE_LENGTH',
        'MAX_TTL',
        'MemoryFencedStore',
        'NotLockedError',
        'QuorumUnreachableError',
        'REDLOCK_CLIENT',
        'REDLOCK_MODULE_OPTIONS',
        'RedisFencedStore',
        'Redlock',
        'RedlockModule',
        'RedlockTelemetry',
        'ResourceBusyError',
        'StaleTokenError',
        'Unlocked',
        'assertLocked',
        'ofLockEvent',
      ],
    ],
    ['nest-redlock/health', health, ['RedlockHealthIndicator', 'RedlockHealthModule']],
    [
      'nest-redlock/testing',
      testing,
      ['MEMORY_REDIS_NODES', 'MemoryRedisNode', 'RedlockTestingModule', 'asNodeSpecs', 'createMemoryNodes', 'createMemoryRedlock'],
    ],
  ])('%s exports exactly these values', (_entry, module, names) => {
    expect(Object.keys(module).sort()).toEqual([...names].sort());
  });
});
