import { IntrinsicException } from '@nestjs/common';
import type { QuorumUnreachableError, ResourceBusyError } from '../core/index.js';

/**
 * What a `@Locked` GraphQL resolver throws when its lock cannot be taken:
 * graphql-js copies an error's `extensions` onto the GraphQL error it makes,
 * so the answer's error carries `extensions.code` `RESOURCE_BUSY` (or
 * `QUORUM_UNREACHABLE`), beside the other fields' data, without an HTTP
 * status of its own. An `IntrinsicException`, so Nest does not log it as a crash.
 */
export class LockGraphQLError extends IntrinsicException {
  readonly extensions: { readonly code: 'RESOURCE_BUSY' | 'QUORUM_UNREACHABLE' };

  constructor(cause: ResourceBusyError | QuorumUnreachableError) {
    super(
      cause.code === 'RESOURCE_BUSY' ? 'The resource is locked by another request' : 'The lock service is unavailable; try again later',
      { cause },
    );
    this.extensions = { code: cause.code };
  }
}
