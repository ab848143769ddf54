import type { LockedMetadata } from './locked.metadata.js';

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

/**
 * Request-scoped (and transient) providers get a new instance per request,
 * made after the module started: their class (its prototype) is registered
 * instead. Several applications in one process that share such a class use
 * the last one registered.
 */
export function registerLockedClass(prototype: object, runner: LockedRunner): void {
  runners.set(prototype, runner);
}

export function runnerOf(instance: object, metadata: LockedMetadata): LockedRunner {
  const runner = instance && (runners.get(instance) ?? runners.get(Object.getPrototypeOf(instance) as object));
  if (!runner) {
    throw new Error(
      `@Locked ${metadata.method} was called on an instance that no RedlockModule manages ` +
        '(import RedlockModule in the module that provides this class, and let Nest create it)',
    );
  }
  return runner;
}
