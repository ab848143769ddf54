import { createHash } from 'node:crypto';
import { InvalidArgumentError } from './errors/invalid-argument.error.js';
import { packedMap } from './packed.js';

/** Longest resource name accepted, in UTF-16 code units: keys stay cheap to send and store. */
export const MAX_RESOURCE_LENGTH = 1024;

/**
 * Most resources in one lock. Each is several keys of one script call per node:
 * far more would exceed what a node takes in one command (and Lua's stack for
 * the script's arguments), and fail on every node at once.
 */
export const MAX_RESOURCES = 1000;

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
  if (list.length === 0 || list.length > MAX_RESOURCES) {
    throw new InvalidArgumentError('resources', `a non-empty array of at most ${MAX_RESOURCES} strings`, list);
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
 * Key layout on every node, in one place. Plain layout:
 * `<prefix>lock:<resource>` holds the holder's value, `<prefix>fence:<resource>`
 * the fencing counter, `<prefix>queue:<resource>` and
 * `<prefix>queue-deadlines:<resource>` the wait queue, `<prefix>handover:<resource>`
 * what a release needs to hand the lock over to a waiter. The namespaces cannot
 * collide whatever the resource name is.
 *
 * Cluster layout (when a node is a Redis Cluster): every key of a resource
 * carries one hash tag so that a script's keys live in one slot:
 * `<prefix>lock:{<tag>}:<resource>`, where the tag is `T<t>` for a resource
 * that has a hash tag `{t}` of its own, and `H<sha1>` of the name otherwise. The
 * tag holds no brace, so the resource is everything after the first `}:` and
 * no two resources share a key. Resources of one lock must share a hash tag.
 */
export class KeyLayout {
  /**
   * The prefix's length in bytes, as a script counts it: ACQUIRE and RELEASE
   * are sent the lock keys only, and build a resource's other keys from its
   * lock key (`<prefix>` + kind + what follows `<prefix>lock`).
   */
  readonly prefixLength: number;

  constructor(
    readonly prefix: string,
    readonly cluster: boolean,
  ) {
    if (cluster && /[{}]/.test(prefix)) {
      throw new InvalidArgumentError('prefix', 'a prefix without braces when a node is a Redis Cluster', prefix);
    }
    this.prefixLength = Buffer.byteLength(prefix);
  }

  lock(resource: string): string {
    return this.key('lock', resource);
  }

  fence(resource: string): string {
    return this.key('fence', resource);
  }

  /** The wait queue of a resource (a sorted set of waiter ids by when they began waiting). */
  queue(resource: string): string {
    return this.key('queue', resource);
  }

  /** How a resource held by permits is used: 'rw' (see permit-scripts.ts). */
  kind(resource: string): string {
    return this.key('kind', resource);
  }

  /** A semaphore's marker, '#<limit>' at the resource's own lock key, while any of its permits may be held (see slot-scripts.ts). */
  slots(resource: string): string {
    return this.lock(resource);
  }

  /**
   * Every key list of slot `slot` of a semaphore on `resource`: a lock of its own
   * (`lock#<slot>`, and its queue), with the resource's fence counter.
   */
  forSlot(resource: string, slot: number): LockKeys {
    const locks = [this.key(`lock#${slot}`, resource)];
    const confirm = [locks[0]!, this.fence(resource)];
    const queues = [this.key(`queue#${slot}`, resource), this.key(`queue-deadlines#${slot}`, resource)];
    return { locks, confirm: () => confirm, queues: () => queues };
  }

  /** When each queued waiter's entry goes stale (a hash of waiter id -> ms). */
  queueDeadlines(resource: string): string {
    return this.key('queue-deadlines', resource);
  }

  /** What a release needs to hand the lock or a permit over to each queued waiter (a hash of waiter id -> 'ttl attempt retention floor value'). */
  handovers(resource: string): string {
    return this.key('handover', resource);
  }

  /**
   * The SCAN pattern of the lock keys whose resource matches `pattern` (a Redis
   * glob): the prefix is escaped, so that its own `*`, `?` or `[` match only themselves.
   */
  lockPattern(pattern: string): string {
    const prefix = `${this.prefix}lock:`.replace(/[*?[\]\\]/g, '\\$&');
    return this.cluster ? `${prefix}{*}:${pattern}` : `${prefix}${pattern}`;
  }

  /** The resource a lock key found by SCAN is for; `undefined` for a key of another layout. */
  resourceOfLockKey(key: string): string | undefined {
    const head = `${this.prefix}lock:`;
    if (!key.startsWith(head)) return undefined;
    if (!this.cluster) return key.slice(head.length);
    // The tag holds no brace: the resource starts after the first '}:'.
    const end = key.indexOf('}:', head.length);
    return key[head.length] === '{' && end > 0 ? key.slice(end + 2) : undefined;
  }

  /** Every key list the scripts of one lock take. */
  forLock(resources: readonly string[], fencing: boolean, fair: boolean): LockKeys {
    if (this.cluster && resources.length > 1) {
      const tag = hashTagOf(resources[0]!);
      if (tag === undefined || resources.some((r) => hashTagOf(r) !== tag)) {
        throw new InvalidArgumentError(
          'resources',
          'names sharing one hash tag when a node is a Redis Cluster (e.g. "{order:42}:stock", "{order:42}:payment")',
          resources,
        );
      }
    }
    const locks = packedMap(resources, (r) => this.lock(r));
    // The rare paths' keys (a write-back, a waiter giving up) are made when first asked for.
    let confirm: readonly string[] | undefined;
    let queues: readonly string[] | undefined;
    return {
      locks,
      confirm: () => (confirm ??= fencing ? [...locks, ...packedMap(resources, (r) => this.fence(r))] : locks),
      queues: () => (queues ??= fair ? resources.flatMap((r) => [this.queue(r), this.queueDeadlines(r)]) : []),
    };
  }

  private key(kind: string, resource: string): string {
    if (!this.cluster) return `${this.prefix}${kind}:${resource}`;
    const tag = hashTagOf(resource);
    const slot = tag === undefined ? `H${createHash('sha1').update(resource).digest('hex')}` : `T${tag}`;
    return `${this.prefix}${kind}:{${slot}}:${resource}`;
  }
}

/** The hash tag Redis Cluster would use for a key made of this name: the first non-empty `{...}`. */
export function hashTagOf(name: string): string | undefined {
  const open = name.indexOf('{');
  if (open < 0) return undefined;
  const close = name.indexOf('}', open + 1);
  return close > open + 1 ? name.slice(open + 1, close) : undefined;
}

/** Every key list the scripts of one lock take, built once per lock. */
export interface LockKeys {
  /** ACQUIRE, EXTEND, RELEASE: the lock keys (ACQUIRE and RELEASE build the others from them). */
  readonly locks: readonly string[];
  /** CONFIRM_TOKEN: locks and fence counters. */
  readonly confirm: () => readonly string[];
  /** LEAVE_QUEUE: queue and deadlines per resource. */
  readonly queues: () => readonly string[];
}
