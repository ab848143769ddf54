import { QuorumUnreachableError, ResourceBusyError } from '../core/index.js';
import type { ResolvedBusy } from './busy.js';
import { LockBusyException } from './lock-busy.exception.js';
import { LockGraphQLError } from './lock-graphql.error.js';
import { LockUnavailableException } from './lock-unavailable.exception.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';

type WsExceptionClass = new (error: string | object) => Error;

/** `@nestjs/websockets`' `WsException`, when the application has gateways (an optional peer, never imported statically). */
let WsException: WsExceptionClass | undefined;

/** Loads `WsException` once, at bootstrap, for applications with gateways. */
export async function loadWsException(): Promise<void> {
  try {
    WsException ??= (await import('@nestjs/websockets')).WsException as WsExceptionClass;
  } catch {
    // Not resolvable from here: gateways get the core error (the default filter answers 'Internal server error').
  }
}

const MESSAGES = {
  RESOURCE_BUSY: 'The resource is locked by another request',
  QUORUM_UNREACHABLE: 'The lock service is unavailable; try again later',
} as const;

/**
 * A controller's (or resolver's) lock that could not be taken, as its
 * transport answers it: HTTP 409 / 503, a GraphQL error with
 * `extensions.code`, a WebSocket `exception` event with `code`; RPC gets the
 * core error.
 */
export function transportError(type: string, options: RedlockModuleOptions, busy: ResolvedBusy, error: unknown): unknown {
  if (!(error instanceof ResourceBusyError) && !(error instanceof QuorumUnreachableError)) return error;
  switch (type) {
    case 'http':
      return error instanceof ResourceBusyError
        ? new LockBusyException(busy.status, error)
        : new LockUnavailableException(options.controllerUnavailable?.status ?? 503, error);
    case 'graphql':
      return new LockGraphQLError(error);
    case 'ws':
      return WsException ? new WsException({ status: 'error', code: error.code, message: MESSAGES[error.code] }) : error;
    default:
      return error;
  }
}
