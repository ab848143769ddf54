import { HttpException } from '@nestjs/common';
import type { ResourceBusyError } from '../core/errors/resource-busy.error.js';

/** Answered by a busy `@Locked` HTTP handler: 409 Conflict unless configured otherwise. */
export class LockBusyException extends HttpException {
  constructor(status: number, cause: ResourceBusyError) {
    super({ statusCode: status, error: 'Conflict', message: 'The resource is locked by another request' }, status, {
      cause,
    });
  }
}
