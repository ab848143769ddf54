/**
 * Renderings of what a caller passed in, short and safe for logs and error
 * messages: never a whole object, never a string of unbounded length.
 */

/** A short rendering of an offending value (its type and size, a string's start, with no credentials). */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const masked = withoutCredentials(value);
    const shown = masked.length > 60 ? `${masked.slice(0, 60)}…` : masked;
    return `${JSON.stringify(shown)} (string of length ${value.length})`;
  }
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return `${String(value)} (${typeof value})`;
  }
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === 'function') return 'a function';
  const tag = Object.prototype.toString.call(value).slice(8, -1);
  return `an object (${tag === 'Object' ? classOf(value as object) : tag})`;
}

/**
 * An instance's class name: a name, never a field. 'Object' for plain objects,
 * nameless classes, and prototypes whose `constructor` is another class's (ioredis
 * mixes EventEmitter's in, which would name every client an EventEmitter).
 */
function classOf(value: object): string {
  const proto = Object.getPrototypeOf(value) as { constructor?: { name?: unknown; prototype?: unknown } } | null;
  const name = proto?.constructor?.prototype === proto ? proto?.constructor?.name : undefined;
  return typeof name === 'string' && name ? name : 'Object';
}

/** Resource names as a message shows them: the first three, each cut at 80 characters. */
export function formatResources(resources: readonly string[]): string {
  const shown = resources.slice(0, 3).map((r) => JSON.stringify(r.length > 80 ? `${r.slice(0, 80)}…` : r));
  return resources.length > 3 ? `[${shown.join(', ')}, … ${resources.length - 3} more]` : shown.join(', ');
}

/**
 * A text that may hold URLs with credentials, with them replaced: everything
 * from the first `scheme://` (or the start) to the last '@' becomes `***`.
 * Not a URL parser on purpose: what reaches an error is what failed to parse
 * (a space or quotes around it, several URLs in one string, a password with an
 * unencoded '@' or '/'), and every spelling must come out without its secret.
 */
export function withoutCredentials(text: string): string {
  if (!text.includes('@')) return text;
  return text.replace(/^(.*?:\/\/)?.*@/s, (_, scheme: string | undefined) => `${scheme ?? ''}***@`);
}
