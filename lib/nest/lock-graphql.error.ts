import { IntrinsicException } from '@nestjs/common';
import type { ClientClosedError, QuorumUnreachableError, ResourceBusyError } from '../core/index.js';
import { UNLOCKED_MESSAGES } from './unlocked-messages.js';

/**
 * What a `@Locked` GraphQL resolver throws when its lock cannot be taken:
 * graphql-js copies an error's `extensions` onto the GraphQL error it makes,
 * so the answer's error carries `extensions.code` `RESOURCE_BUSY` (or
 * `QUORUM_UNREACHABLE`, or `CLIENT_CLOSED` during shutdown), beside the other fields' data, without an HTTP
 * status of its own. An `IntrinsicException`, so Nest does not log it as a crash.
 */
export class LockGraphQLError extends IntrinsicException {
  readonly extensions: { readonly code: 'RESOURCE_BUSY' | 'QUORUM_UNREACHABLE' | 'CLIENT_CLOSED' };

  constructor(cause: ResourceBusyError | QuorumUnreachableError | ClientClosedError) {
    super(UNLOCKED_MESSAGES[cause.code], { cause });
    this.extensions = { code: cause.code };
  }
}
