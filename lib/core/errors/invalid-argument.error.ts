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
    super(`Expected \`${argument}\` to be ${expected}, got ${describe(received)}`);
  }
}

/** A short, log-safe rendering of an offending value (never the whole object). */
export function describe(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 60)}…` : value;
    return `${JSON.stringify(shown)} (string of length ${value.length})`;
  }
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return `${String(value)} (${typeof value})`;
  }
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === 'function') return 'a function';
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}
