import type { LostReason } from './errors/lock-lost.error.js';
import type { LockErrorCode } from './errors/lock.error.js';

interface LockEventBase {
  /** Wall-clock time of the event, ms since the epoch. */
  readonly at: number;
  readonly resources: readonly string[];
}

interface HeldLockEventBase extends LockEventBase {
  /** Public id of the lock (not its secret value), stable for the lock's life. */
  readonly lockId: string;
}

/** A lock was taken. */
export interface LockAcquiredEvent extends HeldLockEventBase {
  readonly type: 'acquired';
  readonly ttl: number;
  readonly validity: number;
  readonly attempts: number;
  /** ms from the call to the lock being handed over, waits included. */
  readonly elapsed: number;
  readonly fencingToken: number | undefined;
  /** A release handed the lock over to this waiter (see the README's "Waiting for a busy resource"); false: its attempt took it. */
  readonly handedOver: boolean;
}

/** An acquisition gave up: the resource is held by someone else. */
export interface LockBusyEvent extends LockEventBase {
  readonly type: 'busy';
  readonly attempts: number;
  readonly elapsed: number;
}

/** An acquisition gave up for another reason than a busy resource (nodes unreachable, aborted). */
export interface LockAcquireFailedEvent extends LockEventBase {
  readonly type: 'acquire-failed';
  readonly code: LockErrorCode;
  readonly attempts: number;
  readonly elapsed: number;
  /**
   * Too few nodes answered (`QUORUM_UNREACHABLE`): how the last attempt's nodes
   * answered, and the first node error, which says why (`1 ok, 2 error; first
   * error: NOPERM ...`): a wrong password or an ACL user without the scripts'
   * commands is otherwise only seen as "unreachable".
   */
  readonly reason?: string;
}

export interface LockExtendedEvent extends HeldLockEventBase {
  readonly type: 'extended';
  readonly ttl: number;
  readonly validity: number;
  readonly elapsed: number;
  /** Extensions of this lock so far, this one included. */
  readonly extensions: number;
}

/** An extension did not reach a quorum; the lock stays valid until its validity ends. */
export interface LockExtendFailedEvent extends HeldLockEventBase {
  readonly type: 'extend-failed';
  readonly code: LockErrorCode;
  readonly validity: number;
}

export interface LockReleasedEvent extends HeldLockEventBase {
  readonly type: 'released';
  /** ms the lock was held. */
  readonly heldFor: number;
  readonly elapsed: number;
  /** Nodes that had confirmed the release (deleted the key or no longer had it) when it was decided: at least a quorum unless it failed. */
  readonly confirmed: number;
}

/** The lock is no longer held: its signal has fired and it is no longer extended. */
export interface LockLostEvent extends HeldLockEventBase {
  readonly type: 'lost';
  readonly reason: LostReason;
}

/** A node's connection reported an error (connection refused, auth failure...). */
export interface NodeErrorEvent {
  readonly type: 'node-error';
  readonly at: number;
  /** `host:port/db`, never credentials. */
  readonly node: string;
  readonly message: string;
}

/** A node restarted inside the restart-guard window: its votes are not counted for a while. */
export interface NodeRestartedEvent {
  readonly type: 'node-restarted';
  readonly at: number;
  readonly node: string;
  /** ms from now during which the node is not counted. */
  readonly excludedFor: number;
}

/**
 * A node has not answered its oldest command for longer than the node timeout:
 * its votes count as no (at once, without queueing more commands on it) until
 * it has answered its backlog. Emitted once per such episode.
 */
export interface NodeHungEvent {
  readonly type: 'node-hung';
  readonly at: number;
  readonly node: string;
  /** ms the node had been silent when it was found hung. */
  readonly silentFor: number;
}

export type LockEvent =
  | LockAcquiredEvent
  | LockBusyEvent
  | LockAcquireFailedEvent
  | LockExtendedEvent
  | LockExtendFailedEvent
  | LockReleasedEvent
  | LockLostEvent
  | NodeErrorEvent
  | NodeRestartedEvent
  | NodeHungEvent;

export type LockEventType = LockEvent['type'];

export type LockEventListener = (event: LockEvent) => void;
