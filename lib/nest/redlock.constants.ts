/** Metadata key `@Locked` stores its settings under (on the method function). */
export const LOCKED_METADATA = 'REDLOCK:LOCKED';

/** Injection token of the quorum client (also injectable by its class, `Redlock`). */
export const REDLOCK_CLIENT = 'REDLOCK:CLIENT';

/** Metadata key `@Unlocked()` sets on a scheduled method the module's `schedule` option must leave alone. */
export const UNLOCKED_METADATA = 'REDLOCK:UNLOCKED';
