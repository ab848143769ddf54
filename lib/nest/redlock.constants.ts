/** Metadata key `@Locked` stores its settings under (on the method function). */
export const LOCKED_METADATA = 'REDLOCK:LOCKED';

/** Injection token of the quorum client (also injectable by its class, `Redlock`). */
export const REDLOCK_CLIENT = 'REDLOCK:CLIENT';
