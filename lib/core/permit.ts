import type { KeyLayout } from './keys.js';
import type { AcquireOptions } from './options.js';
import { PERMIT_ACQUIRE, PERMIT_CONFIRM, PERMIT_EXTEND, PERMIT_RELEASE, type PermitAcquireArgs } from './permit-scripts.js';
import type { Call } from './script.js';

/** What a call asked for beyond a mutex: a semaphore's permit, or a read or write permit of a read-write lock. */
export interface PermitKind {
  /** As stored on the nodes: the limit ('3'), or 'rw'. */
  readonly kind: string;
  /** A writer weighs the whole limit: its value and waiter id end in ':w'. */
  readonly writer: boolean;
}

/** The permit kind of a call's options (checked already); undefined: a mutex. */
export function permitOf(options: AcquireOptions): PermitKind | undefined {
  if (options.limit !== undefined) return { kind: String(options.limit), writer: false };
  if (options.mode !== undefined) return { kind: 'rw', writer: options.mode === 'write' };
  return undefined;
}

const MUTEX = Object.freeze({});

/** What `Lock` says of a permit of this kind: the options it was asked with. */
export function optionsOfPermit(permit: PermitKind | undefined): Pick<AcquireOptions, 'limit' | 'mode'> {
  if (!permit) return MUTEX;
  return permit.kind === 'rw' ? { mode: permit.writer ? 'write' : 'read' } : { limit: Number(permit.kind) };
}

/** A kind in words, for errors: 'mutex', 'semaphore (limit 3)', 'read-write lock'. */
export function describeKind(kind: string | undefined): string {
  if (kind === undefined || kind === 'mutex') return 'mutex';
  return kind === 'rw' ? 'read-write lock' : `semaphore (limit ${kind})`;
}

/** What a node's error says of the resource's kind, if it is a kind mismatch (see PERMIT_ACQUIRE). */
export function mismatchIn(error: string | undefined, asked: string | undefined): string | undefined {
  if (!error) return undefined;
  const other = /WRONGKIND (\S+)/.exec(error);
  if (other) return describeKind(other[1]);
  if (!error.includes('WRONGTYPE')) return undefined;
  // A mutex meets a permits' set, or a permit meets a mutex's string.
  return asked === undefined ? 'semaphore or read-write lock' : 'mutex';
}

/** Every call one permit makes, with its keys, built once per acquire. */
export interface PermitCalls {
  readonly acquire: (args: Omit<PermitAcquireArgs, 'member' | 'kind'>) => Call<{ taken: boolean; value: number }>;
  readonly confirm: (token: number, retention: number) => Call<boolean>;
  readonly extend: (ttl: number) => Call<boolean>;
  /**
   * `leaving`: the waiter id to take out of the queues (a holder's: admitted, it
   * kept its place); `skip`: an undo's own waiter, queued again for `entryTtl` ms.
   */
  readonly release: (opts: { member: boolean; leaving: string; skip: string; entryTtl?: number }) => Call<number>;
  /** The keys: holders (the lock key), then queue and deadlines with fair waiting. */
  readonly locks: readonly string[];
  readonly queues: readonly string[];
}

/**
 * The calls of one permit of `resource`. The holder's member is its secret
 * value (with ':w' for a writer): kept in these closures, never in the lock's
 * public fields.
 */
export function permitCalls(
  layout: KeyLayout,
  resource: string,
  permit: PermitKind,
  value: string,
  options: { fencing: boolean; fair: boolean; wakePrefix: string },
): PermitCalls {
  const { kind } = permit;
  const member = permit.writer ? `${value}:w` : value;
  const holders = layout.lock(resource);
  const kindKey = layout.kind(resource);
  const fence = layout.fence(resource);
  const queues = options.fair ? [layout.queue(resource), layout.queueDeadlines(resource)] : [];
  const handovers = layout.handovers(resource);
  const acquireKeys = [holders, kindKey, ...(options.fencing ? [fence] : []), ...queues, ...(options.fair ? [handovers] : [])];
  // A release hands permits over (see WAKE): it sets the kind key's expiry and raises the counter.
  const releaseKeys = options.fair ? [holders, ...queues, handovers, kindKey, ...(options.fencing ? [fence] : [])] : [holders];
  return {
    acquire: ({ ttl, fair, fencing, attempt }) => PERMIT_ACQUIRE.call(acquireKeys, { member, ttl, kind, fair, fencing, attempt }),
    confirm: (token, retention) => PERMIT_CONFIRM.call([holders, fence], { member, token, retention }),
    extend: (ttl) => PERMIT_EXTEND.call([holders, kindKey], { member, ttl, kind }),
    release: ({ member: giveBack, leaving, skip, entryTtl = 0 }) =>
      PERMIT_RELEASE.call(releaseKeys, {
        member: giveBack ? member : '',
        kind,
        fair: options.fair ? { wakePrefix: options.wakePrefix, leaving, skip, entryTtl } : undefined,
      }),
    locks: [holders],
    queues,
  };
}
