import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `condition` every `every` ms until it holds; fails after `timeout` ms with `what` (a function: read then, to
 * say what was last seen).
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string),
  timeout = 5000,
  every = 10,
): Promise<void> {
  const deadline = performance.now() + timeout;
  while (!(await condition())) {
    if (performance.now() > deadline)
      throw new Error(`timed out after ${timeout} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(every);
  }
}
