import { HttpException } from '@nestjs/common';
import { STATUS_CODES } from 'node:http';
import type { ResourceBusyError } from '../core/index.js';
import { UNLOCKED_MESSAGES } from './unlocked-messages.js';

/** Answered by a busy `@Locked` HTTP handler: 409 Conflict unless configured otherwise (the reason phrase follows the status). */
export class LockBusyException extends HttpException {
  constructor(status: number, cause: ResourceBusyError) {
    super({ statusCode: status, error: STATUS_CODES[status] ?? 'Conflict', message: UNLOCKED_MESSAGES.RESOURCE_BUSY }, status, {
      cause,
    });
  }
}
