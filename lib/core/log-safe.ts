/**
 * Renderings of what a caller passed in, short and safe for logs and error
 * messages: never a whole object, never a string of unbounded length.
 */

/** A short rendering of an offending value (its type and size, a string's start). */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 60)}…` : value;
    return `${JSON.stringify(shown)} (string of length ${value.length})`;
  }
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return `${String(value)} (${typeof value})`;
  }
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === 'function') return 'a function';
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

/** Resource names as a message shows them: the first three, each cut at 80 characters. */
export function formatResources(resources: readonly string[]): string {
  const shown = resources.slice(0, 3).map((r) => JSON.stringify(r.length > 80 ? `${r.slice(0, 80)}…` : r));
  return resources.length > 3 ? `[${shown.join(', ')}, … ${resources.length - 3} more]` : shown.join(', ');
}
