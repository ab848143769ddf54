import { describeValue } from '../log-safe.js';
import { LockError } from './lock.error.js';

/**
 * A value given to the client is out of range or of the wrong type. Thrown
 * synchronously at the boundary (constructor, `acquire`, `extend`), before any
 * command is sent.
 */
export class InvalidArgumentError extends LockError {
  readonly code = 'INVALID_ARGUMENT' as const;

  constructor(
    /** The option or argument at fault, e.g. `ttl` or `nodes[2]`. */
    readonly argument: string,
    /** What was expected, in words. */
    readonly expected: string,
    received: unknown,
  ) {
    super(`Expected \`${argument}\` to be ${expected}, got ${describeValue(received)}`);
  }
}
