import { LockService } from './lock.service.js';
import type { LockedRunner } from './locked.registry.js';
import { failedCall } from './locked.runner.js';

/**
 * Whether a module's `LockService` is the real one, not a test's stand-in for
 * it (`overrideProvider(LockService).useValue(...)`). An auto-mock
 * (`createMock`, `mock`, `mockDeep`) answers every property and call, so no
 * duck test tells it apart: a call through it returned the mock's answer, the
 * method's body never run, and subscribing to its `events$` failed at startup.
 */
export function isLockService(locks: unknown): locks is LockService {
  return locks instanceof LockService;
}

/** What runs a module's `@Locked` (and scheduled) calls: its LockService, or, for a stand-in, a runner failing each call saying so. */
export function lockedRunnerOf(locks: LockService): LockedRunner {
  if (isLockService(locks)) return locks;
  return {
    run: (metadata) =>
      failedCall(
        metadata,
        new TypeError(
          `@Locked ${metadata.method}: the LockService in use cannot run it (a mock? override the Redlock provider, not LockService)`,
        ),
      ),
  };
}
