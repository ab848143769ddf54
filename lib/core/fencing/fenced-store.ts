import { InvalidArgumentError } from '../errors/invalid-argument.error.js';
/**
 * A store that protects its data with fencing tokens: every access carries
 * the token of the lock it runs under, and an access whose token is lower than
 * one the key has already seen is refused with `StaleTokenError`. Reads are
 * checked and recorded as well as writes. Equal tokens pass: one holder may
 * access a key many times.
 *
 * This is what makes a lease-based lock safe against a holder that paused past
 * its ttl: the store, not the lock, rejects it.
 */
export interface FencedStore {
  get(key: string, token: number): Promise<string | null>;
  set(key: string, value: string, token: number): Promise<void>;
  delete(key: string, token: number): Promise<void>;
}

/** A fencing token as a store must see it: a non-negative safe integer (never undefined or NaN, which compare false with everything). */
export function checkToken(token: unknown): number {
  if (typeof token !== 'number' || !Number.isSafeInteger(token) || token < 0) {
    throw new InvalidArgumentError('fencing token', 'a non-negative integer (lock.fencingToken of a fenced lock)', token);
  }
  return token;
}
