import { hostname } from 'node:os';
import { InvalidArgumentError } from './errors/invalid-argument.error.js';

/** Who holds a lock, as the holder chose to record it (shown by `inspect`). */
export interface HolderIdentity {
  readonly app?: string;
  readonly host?: string;
  readonly pid?: number;
}

/** Separates the random part of a lock value from the recorded identity. */
const SEPARATOR = '.';

/**
 * The identity is carried in the lock value after its random part, so it
 * costs no key or command of its own; `inspect` shows the identity, never the
 * random part. `true` records this host and process id.
 */
export function encodeIdentity(identity: HolderIdentity | boolean | undefined): string {
  if (identity === undefined || identity === false) return '';
  const value: HolderIdentity = identity === true ? { host: hostname(), pid: process.pid } : identity;
  if (typeof value !== 'object' || value === null) {
    throw new InvalidArgumentError('identity', 'true, or an object { app?, host?, pid? }', identity);
  }
  const json = JSON.stringify({ app: value.app, host: value.host, pid: value.pid });
  if (json.length > 256) throw new InvalidArgumentError('identity', 'at most 256 characters as JSON', json);
  return SEPARATOR + Buffer.from(json).toString('base64url');
}

/** The identity recorded in a lock value, if any. */
export function decodeIdentity(value: string): HolderIdentity | undefined {
  const at = value.indexOf(SEPARATOR);
  if (at < 0) return undefined;
  try {
    return JSON.parse(Buffer.from(value.slice(at + 1), 'base64url').toString()) as HolderIdentity;
  } catch {
    return undefined;
  }
}
