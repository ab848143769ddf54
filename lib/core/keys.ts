import { InvalidArgumentError } from './errors/invalid-argument.error.js';

/** Longest resource name accepted, in UTF-16 code units: keys stay cheap to send and store. */
export const MAX_RESOURCE_LENGTH = 1024;

/**
 * Checks a resource argument (one name or a list) and returns the names as a
 * frozen array. Names are binary-safe (newlines and braces are fine); they must
 * be non-empty strings, unique, and at most {@link MAX_RESOURCE_LENGTH} long.
 */
export function validateResources(resources: unknown): readonly string[] {
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list)) {
    throw new InvalidArgumentError('resources', 'a non-empty string or a non-empty array of strings', resources);
  }
  if (list.length === 0) {
    throw new InvalidArgumentError('resources', 'a non-empty array of strings', list);
  }
  const seen = new Set<string>();
  list.forEach((resource: unknown, i) => {
    const name = typeof resources === 'string' ? 'resource' : `resources[${i}]`;
    if (typeof resource !== 'string' || resource.length === 0) {
      throw new InvalidArgumentError(name, 'a non-empty string', resource);
    }
    if (resource.length > MAX_RESOURCE_LENGTH) {
      throw new InvalidArgumentError(name, `a string of at most ${MAX_RESOURCE_LENGTH} characters`, resource);
    }
    if (seen.has(resource)) {
      throw new InvalidArgumentError(name, 'a resource named only once in one lock', resource);
    }
    seen.add(resource);
  });
  return Object.freeze([...list] as string[]);
}

/**
 * Key layout on every node, in one place: `<prefix>lock:<resource>` holds the
 * holder's value, `<prefix>fence:<resource>` the fencing counter,
 * `<prefix>queue:<resource>` and `<prefix>queue-deadlines:<resource>` the wait
 * queue. The namespaces cannot collide whatever the resource name is.
 */
export function lockKey(prefix: string, resource: string): string {
  return `${prefix}lock:${resource}`;
}

export function fenceKey(prefix: string, resource: string): string {
  return `${prefix}fence:${resource}`;
}

/** Every key list the scripts of one lock take, built once per lock. */
export interface LockKeys {
  readonly locks: readonly string[];
  /** ACQUIRE: locks, fence counters (fencing on), queue and deadlines per resource (fair waiting on). */
  readonly acquire: readonly string[];
  /** CONFIRM_TOKEN: locks and fence counters. */
  readonly confirm: readonly string[];
  /** RELEASE: locks, then queues (fair waiting on). */
  readonly release: readonly string[];
  /** LEAVE_QUEUE: queue and deadlines per resource. */
  readonly queues: readonly string[];
  /** Channels a waiter is woken on: the queue keys. */
  readonly channels: readonly string[];
}

export function lockKeys(prefix: string, resources: readonly string[], fencing: boolean, fair: boolean): LockKeys {
  const locks = resources.map((r) => lockKey(prefix, r));
  const fences = fencing ? resources.map((r) => fenceKey(prefix, r)) : [];
  const channels = fair ? resources.map((r) => queueKey(prefix, r)) : [];
  const queues = fair ? resources.flatMap((r) => [queueKey(prefix, r), queueDeadlinesKey(prefix, r)]) : [];
  const confirm = fencing ? [...locks, ...fences] : locks;
  return {
    locks,
    acquire: fair ? [...confirm, ...queues] : confirm,
    confirm,
    release: fair ? [...locks, ...channels] : locks,
    queues,
    channels,
  };
}

/** The wait queue of a resource (a sorted set of waiter ids), also the channel its releases are published on. */
export function queueKey(prefix: string, resource: string): string {
  return `${prefix}queue:${resource}`;
}

/** When each queued waiter's entry goes stale (a hash of waiter id -> ms). */
export function queueDeadlinesKey(prefix: string, resource: string): string {
  return `${prefix}queue-deadlines:${resource}`;
}
