import { HttpException } from '@nestjs/common';
import type { QuorumUnreachableError } from '../core/index.js';

/**
 * Answered by a `@Locked` HTTP handler whose lock could not be taken because
 * too few lock nodes answered: 503 Service Unavailable unless configured
 * otherwise (`controllerUnavailable.status`). The response says nothing of the
 * nodes; the error is the exception's `cause`.
 */
export class LockUnavailableException extends HttpException {
  constructor(status: number, cause: QuorumUnreachableError) {
    super({ statusCode: status, error: 'Service Unavailable', message: 'The lock service is unavailable; try again later' }, status, {
      cause,
    });
  }
}
