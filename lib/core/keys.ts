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
 * holder's value, `<prefix>fence:<resource>` the fencing counter. The two
 * namespaces cannot collide whatever the resource name is.
 */
export function lockKey(prefix: string, resource: string): string {
  return `${prefix}lock:${resource}`;
}

export function fenceKey(prefix: string, resource: string): string {
  return `${prefix}fence:${resource}`;
}
