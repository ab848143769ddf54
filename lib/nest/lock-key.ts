import { InvalidArgumentError } from '../core/errors/invalid-argument.error.js';

/**
 * What a key is built from. On HTTP handlers: `params`, `query`, `body`,
 * `user`, `headers` of the request; on RPC/WS handlers: `data`; everywhere:
 * `args`, the method's arguments.
 */
export interface LockKeyContext<TArgs extends unknown[] = unknown[]> {
  readonly args: TArgs;
  readonly params?: Record<string, unknown>;
  readonly query?: Record<string, unknown>;
  readonly body?: any;
  readonly user?: any;
  readonly headers?: Record<string, unknown>;
  readonly data?: any;
}

/**
 * A static resource name (or several), a template such as
 * `'order:{params.id}'` or `'job:{args.0.id}'`, or a function of the call.
 */
export type LockKey<TArgs extends unknown[] = any[]> =
  | string
  | readonly string[]
  | ((context: LockKeyContext<TArgs>) => string | readonly string[]);

const PLACEHOLDER = /\{([^{}]+)\}/g;

/** Builds the resource names of one call. */
export function resolveKey(key: LockKey, context: LockKeyContext): readonly string[] {
  if (typeof key === 'function') {
    const out = key(context as LockKeyContext<any>);
    return typeof out === 'string' ? [out] : out;
  }
  const templates = typeof key === 'string' ? [key] : key;
  return templates.map((template) => fillTemplate(template, context));
}

/** Throws when a template cannot work at all (checked once, when decorating). */
export function checkKey(key: unknown): void {
  if (typeof key === 'function') return;
  const list = typeof key === 'string' ? [key] : key;
  if (!Array.isArray(list) || list.length === 0 || list.some((k) => typeof k !== 'string' || k.length === 0)) {
    throw new InvalidArgumentError('@Locked key', 'a non-empty string, an array of them, or a function', key);
  }
}

function fillTemplate(template: string, context: LockKeyContext): string {
  return template.replace(PLACEHOLDER, (_, path: string) => {
    let value: unknown = context;
    for (const part of path.trim().split('.')) {
      value = value === null || value === undefined ? undefined : (value as Record<string, unknown>)[part];
    }
    if (value === undefined || value === null || value === '' || typeof value === 'object' || typeof value === 'function') {
      throw new InvalidArgumentError(`@Locked key {${path}}`, 'a string, number or boolean in the call', value);
    }
    return String(value);
  });
}
