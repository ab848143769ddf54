import { setTimeout as sleep } from 'node:timers/promises';
import { QuorumUnreachableError } from '../../lib/index.js';

/**
 * Polls `condition` every `every` ms until it holds; fails after `timeout` ms with `what` (a function: read then, to
 * say what was last seen). A condition that reads the nodes (`inspect()`) and finds too few answering in time (a
 * loaded machine descheduling a server past the node timeout) is read again, as a false one is; the last such error
 * is said if time runs out.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string),
  timeout = 5000,
  every = 10,
): Promise<void> {
  const deadline = performance.now() + timeout;
  let unreachable: QuorumUnreachableError | undefined;
  const holds = async () => {
    try {
      return await condition();
    } catch (error) {
      if (!(error instanceof QuorumUnreachableError)) throw error;
      unreachable = error;
      return false;
    }
  };
  while (!(await holds())) {
    if (performance.now() > deadline) {
      const seen = typeof what === 'string' ? what : what();
      throw new Error(`timed out after ${timeout} ms waiting for ${seen}${unreachable ? ` (last: ${unreachable.message})` : ''}`);
    }
    await sleep(every);
  }
}
