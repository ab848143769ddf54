import { InvalidArgumentError } from '../core/index.js';

/**
 * What a key is built from: `args`, the method's arguments as it receives
 * them (after pipes, on controllers too), and `self`, the instance it runs on;
 * on HTTP handlers `params`, `query`, `body`, `user`, `headers` of the
 * request; on RPC/WS handlers `data`; on GraphQL resolvers `data` (the
 * field's arguments), `context` and `user`; on a BullMQ processor's
 * `process(job)`, `job`; on `@Cron` methods, `tick`. A request part the
 * handler receives through a parameter decorator (`@Param('id',
 * ParseIntPipe)`, `@Body() dto`, `@Payload()`, `@Args('id')`) is the value
 * after its pipes; the rest is the raw request.
 */
export interface LockKeyContext<TArgs extends unknown[] = unknown[], TSelf = any> {
  readonly args: TArgs;
  /** The instance the method runs on (`'{self.tenant}'`, `({ self }) => self.prefix`). */
  readonly self: TSelf;
  readonly params?: Record<string, unknown>;
  readonly query?: Record<string, unknown>;
  readonly body?: any;
  readonly user?: any;
  readonly headers?: Record<string, unknown>;
  readonly data?: any;
  /** GraphQL resolvers: the GraphQL context (`req`, and what your context factory adds). */
  readonly context?: any;
  /** A `@nestjs/bullmq` processor's `process(job)`: the job (`'{job.name}:{job.data.orderId}'`). */
  readonly job?: { readonly id?: string; readonly name: string; readonly data: any };
  /**
   * `@Cron` methods: the scheduled fire time of this run (epoch ms), the same
   * on every replica that fires this tick, even one late by less than a period.
   */
  readonly tick?: number;
}

/**
 * A static resource name (or several), a template such as
 * `'order:{params.id}'` or `'job:{args.0.id}'`, or a function of the call.
 */
export type LockKey<TArgs extends unknown[] = any[], TSelf = any> =
  string | readonly string[] | ((context: LockKeyContext<TArgs, TSelf>) => string | readonly string[]);

const PLACEHOLDER = /\{([^{}]+)\}/g;

/** Characters a placeholder value keeps as they are (unless the template's separators use them). */
const KEPT = /^[\p{L}\p{N}_.-]$/u;

/** Builds the resource names of one call. */
export function resolveKey(key: LockKey, context: Omit<LockKeyContext, 'self'> & { readonly self?: unknown }): readonly string[] {
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
  for (const template of list as string[]) {
    if (separatorsOf(template).some((text) => text === '' || /^[\p{L}\p{N}_.%-]*%[\p{L}\p{N}_.%-]*$/u.test(text))) {
      throw new InvalidArgumentError(
        '@Locked key',
        "a template whose placeholders are apart, such as '{a}:{b}' ('{a}{b}' and '{a}%{b}' cannot be told apart)",
        template,
      );
    }
  }
}

/** The texts between two placeholders of a template. */
function separatorsOf(template: string): string[] {
  return template.split(PLACEHOLDER).filter((_, i, parts) => i % 2 === 0 && i > 0 && i < parts.length - 1);
}

/**
 * The characters to encode in this template's values besides the usual ones:
 * those of a separator made only of letters, digits, `-`, `_`, `.` (as in
 * `'{a}-{b}'`). A separator with any other character needs nothing more: that
 * character is always encoded in values, so it marks where a value ends.
 */
function alsoEncoded(template: string): ReadonlySet<string> {
  const chars = new Set<string>();
  for (const text of separatorsOf(template)) {
    if ([...text].every((char) => KEPT.test(char))) for (const char of text) chars.add(char);
  }
  return chars;
}

/**
 * Fills a template's placeholders. Values are percent-encoded (UTF-8) except
 * letters, digits, `-`, `_` and `.`, so `order:42` and `user:3f2a-9c` keep
 * their keys, and distinct values give distinct keys (`tenant:{a}:order:{b}`
 * with `a`, `b:order:c` and with `a:order:b`, `c`).
 */
function fillTemplate(template: string, context: object): string {
  const separators = alsoEncoded(template);
  return template.replace(PLACEHOLDER, (_, path: string) => {
    let value: unknown = context;
    for (const part of path.trim().split('.')) {
      value = value === null || value === undefined ? undefined : (value as Record<string, unknown>)[part];
    }
    if (value === undefined || value === null || value === '' || typeof value === 'object' || typeof value === 'function') {
      throw new InvalidArgumentError(`@Locked key {${path}}`, 'a string, number or boolean in the call', value);
    }
    return encodeValue(String(value), separators);
  });
}

function encodeValue(value: string, separators: ReadonlySet<string>): string {
  let out = '';
  for (const char of value) {
    if (KEPT.test(char) && !separators.has(char)) out += char;
    else for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Where Nest's parameter decorators put a handler argument, by kind of call (`ROUTE_ARGS_METADATA` entries). */
const BOUND_PARTS: Record<string, Record<number, keyof LockKeyContext>> = {
  http: { 3: 'body', 4: 'query', 5: 'params', 6: 'headers' }, // RouteParamtypes BODY, QUERY, PARAM, HEADERS
  rpc: { 3: 'data' }, // RpcParamtype.PAYLOAD
  ws: { 3: 'data' }, // WsParamtype.PAYLOAD
  graphql: { 3: 'data' }, // GqlParamtype.ARGS
};

/** One entry of Nest's `ROUTE_ARGS_METADATA`: `'<paramtype>:<index>' -> { index, data }`. */
export type RouteArgs = Record<string, { index: number; data?: unknown }>;

/**
 * The key context of a controller call: the request's parts, with each part
 * the handler receives through `@Param('x')`, `@Query()`, `@Body()`,
 * `@Headers()` or `@Payload()` replaced by the argument it received (after pipes).
 */
export function afterPipes(
  type: string,
  request: Omit<LockKeyContext, 'args' | 'self'>,
  args: unknown[],
  routeArgs: RouteArgs | undefined,
  self?: unknown,
): LockKeyContext {
  // Spread last (see eslint.config.mjs); `request` has no `args` or `self` of its own.
  const context: Record<string, unknown> = { args, self, ...request };
  const parts = BOUND_PARTS[type] ?? {};
  for (const [slot, { index, data }] of Object.entries(routeArgs ?? {})) {
    const part = parts[Number(/^(\d+):\d+$/.exec(slot)?.[1])];
    if (!part || part === 'args') continue;
    if (data === undefined) context[part] = args[index];
    else if (typeof data === 'string') context[part] = Object.assign({}, context[part], { [data]: args[index] });
  }
  return context as unknown as LockKeyContext;
}
