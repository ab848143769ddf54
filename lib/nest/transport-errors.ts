import { ClientClosedError, QuorumUnreachableError, ResourceBusyError } from '../core/index.js';
import type { ResolvedBusy } from './busy.js';
import { LockBusyException } from './lock-busy.exception.js';
import { LockGraphQLError } from './lock-graphql.error.js';
import { LockUnavailableException } from './lock-unavailable.exception.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { UNLOCKED_MESSAGES } from './unlocked-messages.js';

type ExceptionClass = new (error: string | object) => Error;

/** `@nestjs/websockets`' `WsException`, when the application has gateways (an optional peer, never imported statically). */
let WsException: ExceptionClass | undefined;
/** `@nestjs/microservices`' `RpcException`, when the application has `@Locked` message handlers (an optional peer too). */
let RpcException: ExceptionClass | undefined;

/** Loads `WsException` once, at bootstrap, for applications with gateways. */
export async function loadWsException(): Promise<void> {
  try {
    WsException ??= (await import('@nestjs/websockets')).WsException as ExceptionClass;
  } catch {
    // Not resolvable from here: gateways get the core error (the default filter answers 'Internal server error').
  }
}

/** Loads `RpcException` once, at bootstrap, for applications with `@Locked` message handlers. */
export async function loadRpcException(): Promise<void> {
  try {
    RpcException ??= (await import('@nestjs/microservices')).RpcException as ExceptionClass;
  } catch {
    // Not resolvable from here: message handlers get the core error.
  }
}

/**
 * A controller's (or resolver's) lock that could not be taken (busy, nodes
 * unreachable, or the client closed by shutdown), as its transport answers
 * it: HTTP 409 / 503, a GraphQL error with
 * `extensions.code`, a WebSocket `exception` event or an RPC error with `code`.
 */
export function transportError(type: string, options: RedlockModuleOptions, busy: ResolvedBusy, error: unknown): unknown {
  // A call arriving while the application shuts down (its lock client closed first) is unavailable, as with nodes down.
  if (!(error instanceof ResourceBusyError) && !(error instanceof QuorumUnreachableError) && !(error instanceof ClientClosedError)) {
    return error;
  }
  switch (type) {
    case 'http':
      return error instanceof ResourceBusyError
        ? new LockBusyException(busy.status, error)
        : new LockUnavailableException(options.controllerUnavailable?.status ?? 503, error);
    case 'graphql':
      return new LockGraphQLError(error);
    case 'ws':
      return WsException ? new WsException({ status: 'error', code: error.code, message: UNLOCKED_MESSAGES[error.code] }) : error;
    case 'rpc':
      // The caller gets the object (the default filter neither logs it nor answers 'Internal server error').
      return RpcException ? new RpcException({ status: 'error', code: error.code, message: UNLOCKED_MESSAGES[error.code] }) : error;
    default:
      return error;
  }
}
