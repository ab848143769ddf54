import type { Call, PlainCommand } from './script.js';

// What an acquire sends and what it answers: the same for the ACQUIRE script
// (lib/core/scripts.ts) and for the plain protocol's SET NX.

/**
 * Not a script: the plain protocol's acquire of one resource (fencing and fair
 * waiting off) is `SET key value NX PX ttl`, the wire's floor, with no Lua on
 * the server. `LockNode.send` runs it; its reply is decoded here in ACQUIRE's
 * shape: taken with 0, or refused with -1.
 * A command ioredis resends after a reconnect cannot pass for a refusal: the
 * node fails every command in flight when the connection closes, and the
 * attempt's undo then reaches it. (Not used with Redis Cluster nodes, whose
 * client also resends on redirections.)
 */
export const SET_NX = Object.freeze({
  name: 'set-nx',
  /** `SET keys[0] value NX PX ttl`, decoded as ACQUIRE's reply. */
  call: (keys: readonly string[], args: Pick<AcquireArgs, 'value' | 'ttl'>): Call<AcquireReply> => ({
    command: SET_NX,
    keys,
    argv: [args.value, String(args.ttl)],
    decode: (reply) => (reply === 'OK' ? { taken: true, value: 0 } : { taken: false, value: -1 }),
  }),
}) satisfies PlainCommand;

/** Fair waiting, as one acquire call takes part in it. */
export interface FairWaiting {
  /** The queue entry this call takes when refused; absent: it does not queue (it will not retry). */
  readonly join?: { readonly waiter: string; readonly since: number; readonly entryTtl: number };
}

export interface AcquireArgs {
  readonly value: string;
  readonly ttl: number;
  /** Absent: fair waiting off. */
  readonly fair?: FairWaiting;
  /** Absent: fencing off. `floor`: the acquiring client's clock in µs. */
  readonly fencing?: { readonly retention: number; readonly floor: number };
  /**
   * The key prefix's length in bytes (`KeyLayout.prefixLength`): with fencing or
   * fair waiting on, the script builds a resource's other keys from its lock key.
   */
  readonly prefixLength?: number;
  /**
   * Which attempt of the call this is (1 for the first), recorded in the queue
   * entry it takes when refused: a release that hands the lock over says which
   * attempt's entry it read (see `Turn.handedOver`).
   */
  readonly attempt?: number;
  /** A semaphore's slot (its lock key \`<prefix>lock#<slot>:...\`): the semaphore's limit. */
  readonly limit?: number;
}

/** `taken`: the lock's token in `value` (0 without fencing); refused: -1 (held by another value) or -3 (reserved for an earlier waiter). */
export interface AcquireReply {
  readonly taken: boolean;
  readonly value: number;
  /**
   * A semaphore's slot refused: the other slots this node has free, with nobody queued
   * for them; with none free, those whose queue is much shorter for the waiter (see
   * shorterQueues in slot-scripts.ts). Either way, slots to move to.
   */
  readonly free?: readonly number[];
}
