/**
 * Runs `fn` once the current job and the microtasks queued before this call
 * have run: a native promise's reaction. Not `process.nextTick` or
 * `queueMicrotask`, which test runners' fake timers replace (Jest's do by
 * default): a command corked or batched until a faked tick is never sent, and
 * a caller waiting for its reply (not for a timer) waits for good.
 */
export function later(fn: () => void): void {
  void Promise.resolve().then(fn);
}
