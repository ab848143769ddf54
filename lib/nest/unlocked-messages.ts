/** What a client is told when a controller's (or resolver's, or gateway's) lock could not be taken, by the error's code. */
export const UNLOCKED_MESSAGES = {
  RESOURCE_BUSY: 'The resource is locked by another request',
  QUORUM_UNREACHABLE: 'The lock service is unavailable; try again later',
  CLIENT_CLOSED: 'The service is shutting down; try again later',
} as const;
