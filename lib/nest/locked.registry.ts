import type { LockedMetadata } from './locked.decorator.js';

/** Runs a `@Locked` method call (implemented by `LockService`). */
export interface LockedRunner {
  run(metadata: LockedMetadata, self: object, args: unknown[], original: (...args: unknown[]) => unknown): unknown;
}

/**
 * Which module's `LockService` serves each instance with `@Locked` methods.
 * Filled by the explorer at module init; per instance, so that several Nest
 * applications in one process each use their own nodes.
 */
const runners = new WeakMap<object, LockedRunner>();

export function registerLockedInstance(instance: object, runner: LockedRunner): void {
  runners.set(instance, runner);
}

export function runnerOf(instance: object, metadata: LockedMetadata): LockedRunner {
  const runner = instance && runners.get(instance);
  if (!runner) {
    throw new Error(
      `@Locked ${metadata.method} was called on an instance that no RedlockModule manages ` +
        '(import RedlockModule in the module that provides this class, and let Nest create it)',
    );
  }
  return runner;
}
