import type { LockNode } from './node.js';
import type { Verdict } from './round.js';
import type { AcquireReply } from './scripts.js';

// How a decoded reply counts as a vote. A yes from a node that restarted inside
// the restart-guard window is not counted: it may have lost another holder's key.

/** ACQUIRE and SET NX: taken (the reply's value: the fencing token), or busy. */
export const acquireVerdict = ({ taken, value }: AcquireReply, node: LockNode): Verdict => ({
  outcome: !taken ? 'busy' : node.excluded ? 'excluded' : 'ok',
  value,
});

/** EXTEND and CONFIRM_TOKEN: this holder's keys are there, or not. */
export const heldVerdict = (held: boolean, node: LockNode): Verdict => ({
  outcome: !held ? 'not-held' : node.excluded ? 'excluded' : 'ok',
});

/** RELEASE, LEAVE_QUEUE: any answer is done (a compare-and-delete cannot refuse). */
export const doneVerdict = (): Verdict => ({ outcome: 'ok' });
