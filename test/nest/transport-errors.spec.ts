import { describe, expect, it } from '@jest/globals';
import { ClientClosedError, QuorumUnreachableError } from '../../lib/index.js';
import { LockUnavailableException } from '../../lib/nest/lock-unavailable.exception.js';
import { LockGraphQLError } from '../../lib/nest/lock-graphql.error.js';
import { transportError } from '../../lib/nest/transport-errors.js';
import { resolveBusy } from '../../lib/nest/busy.js';
import type { RedlockModuleOptions } from '../../lib/index.js';

const options = { nodes: ['redis://127.0.0.1:1'] } satisfies RedlockModuleOptions;

describe('a controller call whose lock client closed (a request or message that came during shutdown)', () => {
  const busy = resolveBusy('controller', {}, undefined);
  const closed = new ClientClosedError(['orders:1']);

  it('answers HTTP 503 saying the service is shutting down, as with nodes unreachable', () => {
    const answer = transportError('http', options, busy, closed);
    expect(answer).toBeInstanceOf(LockUnavailableException);
    expect((answer as LockUnavailableException).getStatus()).toBe(503);
    expect((answer as LockUnavailableException).getResponse()).toMatchObject({ message: 'The service is shutting down; try again later' });
    const unreachable = transportError(
      'http',
      { ...options, controllerUnavailable: { status: 502 } },
      busy,
      new QuorumUnreachableError('acquire', ['orders:1'], [], 2),
    );
    expect((unreachable as LockUnavailableException).getStatus()).toBe(502);
  });

  it('gives a GraphQL error with extensions.code CLIENT_CLOSED', () => {
    const answer = transportError('graphql', options, busy, closed);
    expect(answer).toBeInstanceOf(LockGraphQLError);
    expect((answer as LockGraphQLError).extensions).toEqual({ code: 'CLIENT_CLOSED' });
  });
});
