import { HttpException } from '@nestjs/common';
import type { ClientClosedError, QuorumUnreachableError } from '../core/index.js';
import { UNLOCKED_MESSAGES } from './unlocked-messages.js';

/**
 * Answered by a `@Locked` HTTP handler whose lock could not be taken because
 * too few lock nodes answered, or the application was shutting down (its lock
 * client closed): 503 Service Unavailable unless configured
 * otherwise (`controllerUnavailable.status`). The response says nothing of the
 * nodes; the error is the exception's `cause`.
 */
export class LockUnavailableException extends HttpException {
  constructor(status: number, cause: QuorumUnreachableError | ClientClosedError) {
    super({ statusCode: status, error: 'Service Unavailable', message: UNLOCKED_MESSAGES[cause.code] }, status, {
      cause,
    });
  }
}
